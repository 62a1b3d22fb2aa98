#!/usr/bin/env bash
# Runs every test: unit tests, the integration tests of the API server on a real etcd, and the
# end-to-end tests of the berth binary with the real kubectl on PATH and, for the node agent,
# a real containerd (root; hack/deps.sh installs what it runs); then the fuzz targets.
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(gofmt -l cmd pkg test)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" $unformatted >&2
  exit 1
fi
./hack/deps.sh
go vet ./...
# The output is kept so that a failure's summary comes last: CI shows only the tail.
log=$(mktemp /tmp/berth-test.XXXXXX.log)
# The node agents' generated-pods run (test/integration/nodetest) and the end-to-end tests
# on containerd are the two heaviest packages: run together on 2 cores, each one's timing
# suffers (pods that should start in seconds took a minute). The node tests come after
# the rest.
nodetest=./test/integration/nodetest
rest=$(go list ./... | grep -v -x "github.com/berth-cluster/berth/test/integration/nodetest")
run_tests() {
  local rc=0
  go test -count=1 -timeout 30m $rest "$@" || rc=1
  go test -count=1 -timeout 30m "$nodetest" "$@" || rc=1
  return $rc
}
if ! run_tests "$@" 2>&1 | tee "$log"; then
  echo "=== failures (full output above; kept in $log):" >&2
  grep -E -- '^[[:space:]]*(--- FAIL|FAIL|panic:)' "$log" >&2 || true
  echo "=== the last lines the tests wrote:" >&2
  grep -E -- '^[[:space:]]+[A-Za-z_0-9]+\.go:[0-9]+:' "$log" | tail -40 >&2 || true
  exit 1
fi
rm -f "$log"
# Every fuzz target for a bounded time (BERTH_FUZZTIME, 10 s each) on top of its corpus.
./hack/fuzz.sh
