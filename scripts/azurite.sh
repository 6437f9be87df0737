#!/usr/bin/env bash
# Starts Azurite's blob service (npm `azurite`, installed into .azurite by scripts/test.sh) on 127.0.0.1 for the
# tests, creates the container `memwal-test` (with the Python `azure-storage-blob` in .venv-compat), prints the
# account's blob endpoint (http://127.0.0.1:PORT/devstoreaccount1), and stops the server when process WATCH
# (default: the caller) exits.
# usage: bash scripts/azurite.sh [PORT|0] [WATCH_PID]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
port=${1:-0}
watch=${2:-$PPID}
bin="$root/.azurite/node_modules/.bin/azurite-blob"
py="$root/.venv-compat/bin/python"
[ -x "$bin" ] || { echo "azurite.sh: $bin is missing: run scripts/test.sh once (it installs azurite)" >&2; exit 1; }
[ -x "$py" ] || { echo "azurite.sh: $py is missing: run scripts/test.sh once" >&2; exit 1; }
if [ "$port" = 0 ]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
data=$(mktemp -d /tmp/memwal-azurite-XXXXXX)
"$bin" --blobHost 127.0.0.1 --blobPort "$port" --location "$data" --silent --skipApiVersionCheck >/dev/null 2>&1 &
srv=$!
# The watchdog: Azurite (and its folder) go when the process that asked for it goes.
( while kill -0 "$watch" 2>/dev/null && kill -0 "$srv" 2>/dev/null; do sleep 1; done; kill "$srv" 2>/dev/null; rm -rf "$data" ) \
  >/dev/null 2>&1 </dev/null &
endpoint="http://127.0.0.1:$port/devstoreaccount1"
# The emulator's well-known development account (published by Microsoft; not a secret).
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
for _ in $(seq 150); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done
"$py" - "$endpoint" "$key" <<'PY' || { echo "azurite.sh: Azurite did not start on port $port" >&2; exit 1; }
import sys
from azure.storage.blob import BlobServiceClient
endpoint, key = sys.argv[1], sys.argv[2]
client = BlobServiceClient(account_url=endpoint, credential={"account_name": "devstoreaccount1", "account_key": key})
try:
    client.create_container("memwal-test")
except Exception as e:  # an existing container (a reused port) is fine
    if "ContainerAlreadyExists" not in str(e):
        raise
PY
echo "$endpoint"
