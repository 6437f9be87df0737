#!/usr/bin/env bash
# Installs the JS dependencies (when missing or stale), builds the napi addon
# (release) and compiles the TypeScript. Safe to run again: each step is
# incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/napi ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npx napi build --platform --release
npx tsc -p tsconfig.json
