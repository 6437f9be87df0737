#!/usr/bin/env bash
# Installs the pinned tools of the glibc-2.17 Linux build (zig and cargo-zigbuild, from PyPI) into a venv
# under ~/.cache, outside the checkout, and prints the directory to put on PATH. Pinned because a zig or
# cargo-zigbuild release changes the linker and its glibc stubs, that is what the binary loads on.
# Safe to run again: it installs only what is missing or of another version.
set -euo pipefail
ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
tools="${MEMWAL_TOOLS_DIR:-$HOME/.cache/memwal-tools}"
venv="$tools/release-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
want() { "$venv/bin/python" -m pip show "$1" 2>/dev/null | grep -qx "Version: $2"; }
if ! want ziglang "$ZIG_VERSION" || ! want cargo-zigbuild "$ZIGBUILD_VERSION"; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ziglang==$ZIG_VERSION" "cargo-zigbuild==$ZIGBUILD_VERSION" >&2
fi
# cargo-zigbuild calls `zig`; the wheel ships it as a Python module.
cat > "$venv/bin/zig" <<SHIM
#!/bin/sh
exec "$venv/bin/python" -m ziglang "\$@"
SHIM
chmod +x "$venv/bin/zig"
echo "$venv/bin"
