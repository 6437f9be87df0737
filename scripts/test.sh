#!/usr/bin/env bash
# Every test: the Rust workspace (engine, remote client, server with its
# SIGKILL durability test) and jest on the real addon and the real server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --release
npx jest --runInBand
