#!/usr/bin/env bash
# Every test: the Rust workspace (engine, remote client, server with its
# SIGKILL durability test) and jest on the real addon and the real server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The official client, for the compatibility suite (skipped, with a message, if it cannot be installed).
npm ci --prefix bench --no-audit --no-fund || echo "could not install @lancedb/lancedb in bench/: the official-client suite will be skipped"
cargo test --workspace --release
npx jest --runInBand
