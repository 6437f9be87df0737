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
# An S3-compatible server for the object-storage tests: moto_server (If-None-Match / If-Match enforced
# with 412), pinned, on 127.0.0.1, stopped when this script exits. A failed install or start fails the run.
.venv-compat/bin/python -m pip install --quiet --disable-pip-version-check "moto[server]==5.2.5"
MEMWAL_TEST_S3_ENDPOINT=$(bash scripts/moto.sh 0 $$)
export MEMWAL_TEST_S3_ENDPOINT
# An Azure Blob server for the same engine suite: Azurite (npm, pinned) on 127.0.0.1, its container made with
# the Python azure-storage-blob client. A failed install or start fails the run.
npm install --prefix .azurite --no-audit --no-fund --no-save azurite@3.37.0
.venv-compat/bin/python -m pip install --quiet --disable-pip-version-check "azure-storage-blob==12.31.1"
MEMWAL_TEST_AZURE_ENDPOINT=$(bash scripts/azurite.sh 0 $$)
export MEMWAL_TEST_AZURE_ENDPOINT
cargo test --workspace --release
# The engine suite again with every table on S3 (tests that damage files on disk stay local).
MEMWAL_ENGINE_ON_S3=1 cargo test -p memwal-core --release --test engine
# ... and on Azure Blob storage (Azurite): the same create-only commits, through the crate's Azure client.
MEMWAL_ENGINE_ON_AZURE=1 cargo test -p memwal-core --release --test engine
npx jest --runInBand
# The API reference builds without a warning, and the package installs and runs as a user gets it.
npm run --silent docs
bash scripts/pack-test.sh
