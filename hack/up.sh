#!/usr/bin/env bash
# Builds berth and runs a whole cluster in the foreground: `berth up`.
# Usage: hack/up.sh [berth up flags...]   (default data dir: /var/lib/berth as root, ~/.berth otherwise)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null; then
  echo "berth needs Go 1.26 or newer on PATH (https://go.dev/dl/)" >&2
  exit 1
fi
# Nothing else to install yet: etcd is embedded, kubectl is the client.
mkdir -p bin
go build -o bin/berth ./cmd/berth
exec bin/berth up "$@"
