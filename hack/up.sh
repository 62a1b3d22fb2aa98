#!/usr/bin/env bash
# Builds berth and runs a whole cluster in the foreground: `berth up`.
# Usage: hack/up.sh [berth up flags...]   (default data dir: /var/lib/berth as root, ~/.berth otherwise)
# As root it first installs what the node agent runs (hack/deps.sh); without root it runs the
# control plane alone (--node=false), since the node agent needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null; then
  echo "berth needs Go 1.26 or newer on PATH (https://go.dev/dl/)" >&2
  exit 1
fi
args=("$@")
if [ "$(id -u)" = 0 ]; then
  ./hack/deps.sh
else
  echo "not root: running the control plane without a node agent (--node=false)" >&2
  args+=(--node=false)
fi
mkdir -p bin
go build -o bin/berth ./cmd/berth
exec bin/berth up "${args[@]}"
