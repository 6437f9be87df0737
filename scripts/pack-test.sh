#!/usr/bin/env bash
# Packs the package as `npm publish` would and installs it as a user does, into a fresh project with no
# cargo on PATH: the root tarball plus the host's platform package (built from npm/<platform>/ with the
# binary `npm run build` wrote). Checks the binary (stripped, its glibc floor), the tarball's contents,
# attw and publint, the ESM and CJS entry points and subpaths at run time, TypeScript consumers under
# nodenext and bundler resolution, and the loader's error when the platform package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$(date +%s)
fail() { echo "pack-test: $*" >&2; exit 1; }
key=$(node -p 'const l=require("./dist/lib/loader.js"); l.platformKey(process.platform, process.arch, l.detectMusl())')
bin="memwal.$key.node"
[ -f "$bin" ] || fail "no $bin: run npm run build first"

# The binary: stripped, and on glibc Linux loadable on glibc 2.17.
readelf -S "$bin" | grep -q '\.symtab' && fail "$bin is not stripped"
if [ "$key" = "linux-x64-gnu" ] || [ "$key" = "linux-arm64-gnu" ]; then
  floor=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
  [ "$(printf '%s\nGLIBC_2.17\n' "$floor" | sort -V | tail -1)" = "GLIBC_2.17" ] || fail "$bin needs $floor (> GLIBC_2.17)"
  echo "binary: $(du -m "$bin" | cut -f1) MB, stripped, needs at most $floor"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
npm pack --silent --pack-destination "$tmp" >/dev/null
tarball=$(ls "$tmp"/memwal-*.tgz)
contents=$(tar -tzf "$tarball")
for want in package/dist/lib/index.js package/dist/lib/index.d.ts package/dist/lib/arrow-api.js \
  package/dist/lib/embedding/index.js package/LICENSE package/NOTICE package/arrow/package.json; do
  grep -qx "$want" <<<"$contents" || fail "tarball lacks $want"
done
if grep -E '\.map$|\.node$|examples/|native-check|__test__|crates/|\.rs$' <<<"$contents"; then
  fail "tarball ships files it should not (above)"
fi
echo "tarball: $(wc -l <<<"$contents") files, $(du -k "$tarball" | cut -f1) KB"
npx attw "$tarball"
npx publint run "$tarball" --strict

# The platform package, as `napi artifacts` + `napi prepublish` publish it.
cp -r "npm/$key" "$tmp/platform"
cp "$bin" "$tmp/platform/"
(cd "$tmp/platform" && npm pack --silent --pack-destination "$tmp" >/dev/null)
platform_tarball=$(ls "$tmp"/memwal-"$key"-*.tgz)

# A user's project, with no cargo and no checkout on its PATH.
app="$tmp/app"
mkdir -p "$app"
cp scripts/pack-test/* "$app/"
cd "$app"
echo '{ "name": "app", "private": true }' >package.json
nodebin=$(dirname "$(command -v node)")
userpath="$nodebin:/usr/bin:/bin"
PATH="$userpath" npm install --silent --no-audit --no-fund "$tarball"
# Without the platform package the loader names it.
if out=$(PATH="$userpath" node -e 'require("memwal")' 2>&1); then fail "memwal loaded without its platform package"; fi
grep -q "memwal-$key" <<<"$out" || fail "the loader's error does not name memwal-$key: $out"
PATH="$userpath" npm install --silent --no-audit --no-fund "$platform_tarball" "@types/node@20" "typescript@5.9.3"
PATH="$userpath" node smoke.mjs
PATH="$userpath" node smoke.cjs
PATH="$userpath" npx tsc -p tsconfig.nodenext.json
PATH="$userpath" npx tsc -p tsconfig.bundler.json
cd "$root"
echo "pack-test passed in $(( $(date +%s) - start )) s"
