#!/usr/bin/env bash
# Starts moto_server (the S3 API of the moto[server] PyPI package, installed into .venv-compat by
# scripts/test.sh) on 127.0.0.1 for the tests, creates the bucket `memwal-test`, prints the endpoint,
# and stops the server when process WATCH (default: the caller) exits.
# usage: bash scripts/moto.sh [PORT|0] [WATCH_PID]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
port=${1:-0}
watch=${2:-$PPID}
moto_bin="$root/.venv-compat/bin/moto_server"
[ -x "$moto_bin" ] || { echo "moto.sh: $moto_bin is missing: run scripts/test.sh once (it installs moto[server])" >&2; exit 1; }
if [ "$port" = 0 ]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
"$moto_bin" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
# The watchdog: moto goes when the process that asked for it goes.
( while kill -0 "$watch" 2>/dev/null && kill -0 "$moto" 2>/dev/null; do sleep 1; done; kill "$moto" 2>/dev/null ) \
  >/dev/null 2>&1 </dev/null &
for _ in $(seq 150); do
  curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf -X PUT "http://127.0.0.1:$port/memwal-test" >/dev/null || { echo "moto.sh: moto_server did not start on port $port" >&2; exit 1; }
echo "http://127.0.0.1:$port"
