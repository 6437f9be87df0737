#!/usr/bin/env bash
# Installs the JS dependencies (when missing or stale), builds the napi addon (release, stripped) and
# compiles the TypeScript. On x86_64 Linux the addon is linked against glibc 2.17 with zig (the binary the
# package ships, loading on every Linux users run Node 20+ on); elsewhere it is a plain host build.
# Safe to run again: each step is incremental. Cargo builds are cached outside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memwal-target}"
if [ ! -x node_modules/.bin/napi ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ]; then
  PATH="$(bash scripts/release-tools.sh):$PATH"
  export PATH
  start=$(date +%s)
  npx napi build --platform --release --strip -x --target x86_64-unknown-linux-gnu.2.17
  echo "addon built (zig, glibc 2.17) in $(( $(date +%s) - start )) s"
else
  npx napi build --platform --release --strip
fi
npx tsc -p tsconfig.json
