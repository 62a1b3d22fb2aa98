#!/usr/bin/env bash
# Idle memory of `berth up`, as bench/RESULTS.md reports it since issue 13:
#
#   bench/idle-rss.sh BERTH_BINARY [berth up flags, e.g. --node=false]
#
# Starts BERTH_BINARY up in a new data dir with a cold page cache (a binary the linker has just
# written sits whole in the page cache, and the kernel's fault-around then maps 10–15 MB more
# of it into the process), waits 45 s, and prints VmRSS, the anonymous and file parts, and the
# Go heap after a forced GC (live, in use, next GC target) and the goroutines. Needs root (the
# page cache; the node agent). Alternate two binaries' runs to compare them.
set -euo pipefail
bin=$1; shift
dir=$(mktemp -d /tmp/idle-rss.XXXXXX)
# berth down --cleanup: the pod bridge and the service proxy's table go with the run.
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; "$bin" down --cleanup --data-dir "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
sync; echo 3 > /proc/sys/vm/drop_caches
"$bin" up --data-dir "$dir" --port 16443 --etcd-client-port 12379 --scheduler-health-address "" "$@" >"$dir/log" 2>&1 &
pid=$!
sleep 45
rss=$(awk '/^VmRSS/{print $2}' /proc/$pid/status)
anon=$(awk '/^Anonymous/{print $2}' /proc/$pid/smaps_rollup)
file=$(awk '/^Pss_File/{print $2}' /proc/$pid/smaps_rollup)
k() { kubectl --kubeconfig "$dir/admin.kubeconfig" get --raw "$1"; }
heap=$(k '/debug/pprof/heap?gc=1&debug=1' | awk '$2=="HeapAlloc"{a=$4} $2=="HeapInuse"{i=$4} $2=="NextGC"{n=$4} END{printf "live_heap_mb=%.1f heap_inuse_mb=%.1f next_gc_mb=%.1f", a/1e6, i/1e6, n/1e6}')
goroutines=$(k '/debug/pprof/goroutine?debug=1' | awk 'NR==1{print $4}')
echo "rss_mib=$((rss / 1024)) anon_mb=$((anon / 1000)) file_mb=$((file / 1000)) $heap goroutines=$goroutines"
