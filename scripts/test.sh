#!/usr/bin/env bash
# Every test: the Rust workspace (engine, remote client, server with its
# SIGKILL durability test) and jest on the real addon and the real server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# TypeScript held to the Rust bar: biome's linter (recommended rules, no `any`, no `!`) and formatter
# over lib/, the tests, examples and scripts (biome.json); `npm run format` fixes what it can.
npx biome check
python3 scripts/house.py
# The official client, for the compatibility suite: a failed install fails the run.
# `npm install`, not `npm ci`: @lancedb/lancedb 0.39.0 lists optional platform packages with no
# published version, which npm ci reports as missing from any lock file.
npm install --prefix bench --no-audit --no-fund --no-save
# The official Python client, in a venv of its own: a failed install fails the run.
[ -x .venv-compat/bin/python ] || python3 -m venv .venv-compat
.venv-compat/bin/python -m pip install --quiet --disable-pip-version-check lancedb==0.40.0 pyarrow
cargo test --workspace --release
npx jest --runInBand
# The API reference builds without a warning, and the package installs and runs as a user gets it.
npm run --silent docs
bash scripts/pack-test.sh
