#!/usr/bin/env bash
# Runs Kubernetes' own e2e suite (the tests of hack/conformance/tests.txt) against berth, and
# ends with the line "conformance: P passed, F failed" (a listed test that was skipped or did
# not run counts as failed).
#
#   hack/conformance.sh [--target upstream|berth] [--procs N (6)] [--focus REGEX] [--keep]
#
# The whole list takes about 35 minutes with 6 processes on 2 cores (the tests mostly wait).
#
# --target upstream (the default): upstream etcd and kube-apiserver, with berth node,
#   berth scheduler and berth controllers joined to them. The yardstick of berth's node agent
#   and scheduler. kube-apiserver runs as kubeadm configures it: its default admission plugins
#   (ServiceAccount among them) and NodeRestriction, the front proxy's CA and client
#   certificate; it reaches aggregated APIs at their endpoints (--enable-aggregator-routing),
#   as berth's API server does. Upstream has no service proxy or DNS here, so the network
#   tests that need them fail on this target.
# --target berth: berth up alone, its node at this machine's address (as berth node is for
#   upstream), its cluster DNS answering before the suite starts. --minStartupPods -1 skips
#   the BeforeSuite's wait for kube-system's pods and their controllers: there are none to
#   wait for (berth up runs its DNS in its own process, not as a pod).
# --focus REGEX: only the listed tests whose name matches REGEX (for working on one).
# --keep: leave the cluster running after the suite (print how to reach it); stop it later
#   with hack/conformance.sh --down.
#
# The upstream tools (e2e.test, ginkgo, kube-apiserver, etcd, agnhost, sample-apiserver) are
# built from the Go module proxy by hack/conformance/go.mod (about 10 minutes on 2 cores) and
# cached in $BERTH_CONFORMANCE_CACHE (/var/cache/berth-conformance); so are the test images,
# built offline (hack/conformance/images). Needs root; installs what it runs (hack/deps.sh,
# debootstrap). Leaves nothing behind: processes, bridges, routes, mounts, shims and
# iptables rules go with the run.
# The braces make bash read the whole script before it runs any of it.
{
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

target=upstream procs=6 focus="" keep=false down=false
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target=$2; shift 2 ;;
    --target=*) target=${1#*=}; shift ;;
    --procs) procs=$2; shift 2 ;;
    --procs=*) procs=${1#*=}; shift ;;
    --focus) focus=$2; shift 2 ;;
    --focus=*) focus=${1#*=}; shift ;;
    --keep) keep=true; shift ;;
    --down) down=true; shift ;;
    *) echo "hack/conformance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$target" in upstream|berth) ;; *) echo "hack/conformance.sh: --target is upstream or berth" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then
  echo "hack/conformance.sh runs a node agent and containerd: run it as root" >&2
  exit 1
fi

k8s_version=v1.37.2
cache=${BERTH_CONFORMANCE_CACHE:-/var/cache/berth-conformance}
bin=$cache/bin/$k8s_version
run=${BERTH_CONFORMANCE_DIR:-/var/lib/berth-conformance}
data=$run/data
logs=$run/logs
report=$run/report
bridge=berthconf0
node_name=$(hostname | tr 'A-Z_.' 'a-z--')
etcd_port=23790 api_port=16443 node_port=10250 sched_health=127.0.0.1:11259

log() { echo "conformance: $*" >&2; }

# down stops what a run started and removes its state: every process of the run (by pid
# file), then berth down --cleanup for the node's containerd, pods, mounts and bridge.
down() {
  local p
  for p in "$run"/pids/*; do
    [ -f "$p" ] || continue
    kill "$(cat "$p")" 2>/dev/null || true
  done
  for p in "$run"/pids/*; do
    [ -f "$p" ] || continue
    for _ in $(seq 50); do kill -0 "$(cat "$p")" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$(cat "$p")" 2>/dev/null || true
    wait "$(cat "$p")" 2>/dev/null || true
    rm -f "$p"
  done
  if [ -x "$run/berth" ] && [ -d "$data" ]; then
    "$run/berth" down --cleanup --data-dir "$data" >/dev/null 2>&1 || true
  fi
  if ip link show "$bridge" >/dev/null 2>&1; then ip link delete "$bridge" || true; fi
  rm -rf "$data" "$run/etcd"
}
if $down; then
  down
  exit 0
fi

# 1. What the run needs from Debian.
./hack/deps.sh
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v curl >/dev/null || need+=(curl)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v make >/dev/null || need+=(make)
command -v bzip2 >/dev/null || need+=(bzip2)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# 2. The upstream tools, built once per version.
# The version the binaries report (kube-apiserver's /version, which tests compare against):
# what upstream's build stamps in with hack/lib/version.sh.
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-10-27T12:01:04Z"
done
build() { # build NAME PACKAGE [test]
  local name=$1 pkg=$2 kind=${3:-}
  [ -x "$bin/$name" ] && return 0
  log "building $name ($pkg $k8s_version)"
  mkdir -p "$bin"
  if [ "$kind" = test ]; then
    (cd hack/conformance && go test -c -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg")
  else
    (cd hack/conformance && go build -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg")
  fi
  mv "$bin/$name.tmp" "$bin/$name"
}
build e2e.test k8s.io/kubernetes/test/e2e test
build ginkgo github.com/onsi/ginkgo/v2/ginkgo
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build etcd ./etcd
# What goes into images is static.
CGO_ENABLED=0 build agnhost k8s.io/kubernetes/test/images/agnhost
CGO_ENABLED=0 build nonewprivs k8s.io/kubernetes/test/images/nonewprivs
CGO_ENABLED=0 build pause ./pause
# The Aggregator test's aggregated API server (k8s.io/sample-apiserver, hack/conformance/go.mod).
CGO_ENABLED=0 build sample-apiserver k8s.io/sample-apiserver
mkdir -p "$run"
go build -o "$run/berth" ./cmd/berth
(cd hack/conformance && go build -o "$run/harness" ./harness)

# The busybox of the busybox images: upstream's 1.37.0 built static from the source Debian's
# mirror serves. Debian's own busybox-static (also 1.37 in trixie) drops environment
# variables whose names are not shell names (data-1), which the ConfigMap and Secret
# "consumable via the environment" tests read back with sh -c env; upstream's ash keeps them.
busybox=$cache/bin/busybox-1.37.0
if [ ! -x "$busybox" ]; then
  log "building busybox 1.37.0"
  src=$cache/images/busybox-src
  rm -rf "$src" && mkdir -p "$src"
  curl -fsSL -o "$src/busybox.tar.bz2" http://deb.debian.org/debian/pool/main/b/busybox/busybox_1.37.0.orig.tar.bz2
  echo "3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4  $src/busybox.tar.bz2" | sha256sum -c --quiet
  tar -C "$src" -xjf "$src/busybox.tar.bz2"
  (
    cd "$src/busybox-1.37.0"
    make defconfig >/dev/null
    # Static; without tc, which does not build against this kernel's headers.
    sed -i 's/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/; s/^CONFIG_TC=y/# CONFIG_TC is not set/' .config
    make -j"$(nproc)" >"$cache/images/busybox-build.log" 2>&1
  )
  cp "$src/busybox-1.37.0/busybox" "$busybox.part"
  mv "$busybox.part" "$busybox"
  rm -rf "$src"
fi

# The Debian root file system of the images that are Debian-based upstream (and of agnhost,
# whose tools upstream's Alpine base has), from the Debian mirror, once.
bookworm=$cache/images/bookworm.tar
if [ ! -s "$bookworm" ]; then
  log "making the Debian bookworm root file system (debootstrap)"
  tmp=$cache/images/bookworm.tmp
  rm -rf "$tmp"
  mkdir -p "$cache/images"
  debootstrap --variant=minbase --include=dnsutils,curl,netcat-openbsd,iproute2,socat,nginx-light,procps \
    bookworm "$tmp" http://deb.debian.org/debian >"$cache/images/debootstrap.log"
  # What the runtime provides per container, and what only the build needed.
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/* "$tmp"/etc/resolv.conf \
    "$tmp"/etc/hostname "$tmp"/debootstrap
  tar -C "$tmp" --numeric-owner -cf "$bookworm.part" .
  mv "$bookworm.part" "$bookworm"
  rm -rf "$tmp"
fi

# A previous run that was stopped half way leaves its cluster: take it down first.
down
mkdir -p "$run/pids" "$logs" "$data" "$report"
rm -rf "${report:?}"/*
trap 'if ! $keep; then down; fi' EXIT

start() { # start NAME COMMAND...: runs COMMAND in the background, logging to $logs/NAME.log
  local name=$1; shift
  "$@" >"$logs/$name.log" 2>&1 &
  echo $! >"$run/pids/$name"
}

wait_for() { # wait_for WHAT SECONDS COMMAND...
  local what=$1 secs=$2; shift 2
  for _ in $(seq $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  log "$what did not come up in ${secs}s; its log is in $logs"
  exit 1
}

kubeconfig=$run/admin.kubeconfig
# The machine's address: the API server's advertise address and the node's InternalIP, which
# the NodePort and HostPort tests dial (they skip or collide on a loopback InternalIP).
advertise=$(hostname -I | awk '{print $1}')
# The Services' range, the same for both targets: kube-dns is at its tenth address, 10.96.0.10.
service_range=10.96.0.0/16
# e2e.test flags of one target only.
e2e_target_flags=()
case "$target" in
upstream)
  # The cluster's PKI: berth's CA (DATA_DIR/pki, where berth node issues its serving
  # certificate from), the API server's serving pair and the service-account keys.
  pki=$data/pki
  "$run/harness" pki --dir "$pki" --api-ip "$advertise"
  etcd_dir=$run/etcd
  start etcd "$bin/etcd" --data-dir "$etcd_dir" --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls http://127.0.0.1:23800 \
    --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster default=http://127.0.0.1:23800 \
    --log-level warn
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$etcd_port/health"
  start kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 0.0.0.0 --secure-port "$api_port" --advertise-address "$advertise" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$pki/front-proxy-client.crt" --proxy-client-key-file "$pki/front-proxy-client.key" \
    --enable-aggregator-routing=true \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range "$service_range" \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction \
    --allow-privileged=true \
    --profiling=false
  "$run/harness" kubeconfigs --dir "$pki" --server "https://127.0.0.1:$api_port" --node "$node_name" --out "$run"
  wait_for kube-apiserver 90 kubectl --kubeconfig "$kubeconfig" get --raw /readyz
  # (The API server proxies to nodes only at addresses that are not loopback: the node's
  # InternalIP is the machine's own.)
  # The binding kubeadm makes: the API server's kubelet client may use the node API.
  # berth controllers runs as kube-controller-manager does (system:kube-controller-manager,
  # each controller with its service account's token), publishing kube-root-ca.crt too.
  "$run/harness" bootstrap --kubeconfig "$kubeconfig"
  start scheduler "$run/berth" scheduler --kubeconfig "$run/scheduler.kubeconfig" --health-address "$sched_health"
  start controllers "$run/berth" controllers --kubeconfig "$run/controllers.kubeconfig" --leader-elect=false \
    --use-service-account-credentials
  start node "$run/berth" node --kubeconfig "$run/node.kubeconfig" --data-dir "$data" \
    --node-name "$node_name" --node-ip "$advertise" --node-port "$node_port" --bridge "$bridge" --pod-cidr 10.249.0.0/24 \
    --pod-logs-dir "$data/pod-logs"
  ;;
berth)
  # berth up serves the kubernetes Service (the BeforeSuite reads its cluster IP), runs the
  # cluster DNS behind kube-system/kube-dns at 10.96.0.10 and gives it to the node as its
  # clusterDNS (cluster.local).
  start up "$run/berth" up --data-dir "$data" --bridge "$bridge" --port "$api_port" \
    --etcd-client-port 0 --node-name "$node_name" --node-ip "$advertise" --node-port "$node_port" \
    --service-cluster-ip-range "$service_range" \
    --pod-cidr 10.249.0.0/24 --pod-logs-dir "$data/pod-logs" --scheduler-health-address "$sched_health"
  wait_for "berth up" 90 test -s "$data/admin.kubeconfig"
  cp "$data/admin.kubeconfig" "$kubeconfig"
  # No kube-system pods to wait for (see the header).
  e2e_target_flags+=(--minStartupPods -1)
  ;;
esac
wait_for "node $node_name" 120 kubectl --kubeconfig "$kubeconfig" wait --for=condition=Ready "node/$node_name" --timeout=1s
if [ "$target" = berth ]; then
  # The DNS tests' pods ask it at once; so does the OIDC discovery test.
  if ! "$run/harness" dns --kubeconfig "$kubeconfig" --dns-domain cluster.local --timeout 90s; then
    log "the cluster DNS did not answer; berth up's log is in $logs"
    exit 1
  fi
fi

# 3. The test images, under the names the suite pulls, imported into the node's containerd.
k8s_src=$(cd hack/conformance && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
"$run/harness" images --bookworm "$bookworm" --busybox "$busybox" --bin "$bin" --agnhost-src "$k8s_src/test/images/agnhost" \
  --out "$run/images.tar"
"$run/berth" image import --data-dir "$data" "$run/images.tar" >/dev/null

# 4. The suite: the listed tests, in parallel, [Serial] ones last (ginkgo runs them after
# the parallel ones, on one process).
focus_file=$run/focus.txt
"$run/harness" focus --tests hack/conformance/tests.txt --match "$focus" >"$focus_file"
if [ ! -s "$focus_file" ]; then
  log "no listed test matches --focus $focus"
  exit 2
fi
set +e
KUBECONFIG=$kubeconfig "$bin/ginkgo" --procs "$procs" --timeout 3h --no-color \
  --focus "$(cat "$focus_file")" --json-report "$report/report.json" \
  "$bin/e2e.test" -- --kubeconfig "$kubeconfig" --provider local \
  --report-dir "$report" --e2e-output-dir "$report" --allowed-not-ready-nodes 0 \
  --dns-domain cluster.local \
  --container-runtime-endpoint "unix://$data/node/containerd/containerd.sock" \
  ${e2e_target_flags[@]+"${e2e_target_flags[@]}"} \
  >"$logs/e2e.log" 2>&1
set -e
"$run/harness" report --tests hack/conformance/tests.txt --match "$focus" --report "$report/report.json"
if $keep; then
  log "the cluster is still running: KUBECONFIG=$kubeconfig; stop it with hack/conformance.sh --down"
fi
exit
}
