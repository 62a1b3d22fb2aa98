#!/usr/bin/env bash
# Runs every Go fuzz target for a bounded time each, one after another (go test fuzzes one
# target per run), and fails if any finds a crash. The crashing input is left in the target's
# testdata/fuzz/<FuzzName>/ directory: commit it with the fix, and plain `go test` replays it.
#
#   BERTH_FUZZTIME  time per target (default 10s; any -fuzztime value, e.g. 60s or 5000x)
#   BERTH_FUZZ_PARALLEL  fuzzing workers per target (default 2: the machines have 2 cores)
#   BERTH_FUZZ_ONLY  a regular expression: run only the targets whose name matches
#   BERTH_FUZZ_MINIMIZETIME  time to minimize a new input (default 1s)
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${BERTH_FUZZTIME:-10s}
parallel=${BERTH_FUZZ_PARALLEL:-2}
only=${BERTH_FUZZ_ONLY:-.}
# Go minimizes every input that finds new coverage, for up to 60 s by default: with these
# targets (a large part of the API machinery instrumented) that would use up the whole budget.
minimize=${BERTH_FUZZ_MINIMIZETIME:-1s}

# package  target: every fuzz target of berth.
targets=(
  "./pkg/apiserver/registry/core/pod FuzzPodDecodeValidate"
  "./pkg/apiserver/registry/core/node FuzzNodeDecodeValidate"
  "./pkg/node/kuberuntime FuzzComputePodActions"
  "./pkg/node/kuberuntime FuzzGenerateContainerConfig"
  "./pkg/node/config FuzzStaticPodManifest"
  "./pkg/node FuzzLoadKubeletConfiguration"
  "./pkg/scheduler/config FuzzLoadSchedulerConfig"
  "./pkg/dns FuzzServeDNS"
)

# A target someone added without listing it here would never be fuzzed.
listed=$(printf '%s\n' "${targets[@]}" | awk '{print $2}' | sort)
found=$(grep -rhoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' cmd pkg | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | sort)
if [ "$listed" != "$found" ]; then
  echo "hack/fuzz.sh lists other fuzz targets than the tree has:" >&2
  diff <(echo "$listed") <(echo "$found") >&2 || true
  exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=()
for entry in "${targets[@]}"; do
  read -r pkg name <<<"$entry"
  [[ $name =~ $only ]] || continue
  echo "--- fuzzing $name in $pkg for $fuzztime"
  if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" -parallel "$parallel" "$pkg" 2>&1 | tee "$out"; then
    continue
  fi
  # When -fuzztime ends while a new input is being minimized, go test fails with only
  # "context deadline exceeded" and writes no input: the engine's deadline, not a crash.
  if ! grep -q 'Failing input written to' "$out" && [ "$(grep -c '^    context deadline exceeded$' "$out")" = 1 ] && grep -q '^--- FAIL: '"$name"' ' "$out"; then
    echo "($name: fuzzing time ran out while minimizing a new input; no crash)"
    continue
  fi
  failed+=("$name ($pkg)")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found crashes in: ${failed[*]}" >&2
  echo "the inputs are in each package's testdata/fuzz/<FuzzName>/; replay with go test -run '<FuzzName>/<file>'" >&2
  exit 1
fi
echo "fuzzing: ${#targets[@]} targets, $fuzztime each, no crash"
