#!/usr/bin/env bash
# D workload from a light load generator: the memwal-server binary in its own
# process, driven by crates/server/examples/loadgen.rs (one thread; 1 and 8
# connections; 200-row 128-d memWal upserts, half updates). Prints one JSON
# line per run. Usage: bench/loadgen.sh [SERVER_BINARY ...] (default: the
# release build of this tree). SECONDS_PER_RUN (default 10) sets the length.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release -q -p memwal-server --bin memwal-server --example loadgen
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("$target/release/memwal-server")
secs="${SECONDS_PER_RUN:-10}"
for bin in "${bins[@]}"; do
  data=$(mktemp -d)
  log=$(mktemp)
  "$bin" --data "$data" --port 0 --api-key k >"$log" 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$log" && break; sleep 0.1; done
  url=$(sed -n 's/.*listening on //p' "$log")
  for conns in 1 8; do
    printf '{"server": "%s", "run": ' "$bin"
    "$target/release/examples/loadgen" "$url" "$conns" "$secs"
    printf '}\n'
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$data" "$log"
done
