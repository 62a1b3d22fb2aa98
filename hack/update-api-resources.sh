#!/usr/bin/env bash
# Writes test/e2e/testdata/api-resources-v1.37.2.txt, what `kubectl api-resources -o wide`
# prints against an upstream kube-apiserver v1.37.2 with its default flags (and the
# flags it cannot start without: etcd, service-account keys, a client CA, Node,RBAC), and
# test/e2e/testdata/discovery-v1.37.2.txt, every resource and subresource its discovery
# documents list ("GROUPVERSION NAME KIND NAMESPACED VERBS"): the lists
# TestAPIResourcesMatchUpstream holds berth up to. Builds kube-apiserver and etcd from
# hack/conformance/go.mod into the conformance cache if they are not there (as
# hack/conformance.sh does); needs kubectl and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
k8s_version=v1.37.2
bin=${BERTH_CONFORMANCE_CACHE:-/var/cache/berth-conformance}/bin/$k8s_version
mkdir -p "$bin"
[ -x "$bin/kube-apiserver" ] || (cd hack/conformance && go build -o "$bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
[ -x "$bin/etcd" ] || (cd hack/conformance && go build -o "$bin/etcd" ./etcd)
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
cd "$dir"
openssl genrsa -out sa.key 2048 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj /O=system:masters/CN=admin 2>/dev/null
openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 1 2>/dev/null
"$bin/etcd" --data-dir etcd --listen-client-urls http://127.0.0.1:24379 --advertise-client-urls http://127.0.0.1:24379 \
  --listen-peer-urls http://127.0.0.1:24380 >etcd.log 2>&1 &
pids+=($!)
"$bin/kube-apiserver" --etcd-servers http://127.0.0.1:24379 --secure-port 26443 --cert-dir "$dir/certs" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local --service-account-key-file sa.key \
  --service-account-signing-key-file sa.key --client-ca-file ca.crt --authorization-mode Node,RBAC >apiserver.log 2>&1 &
pids+=($!)
cat >kubeconfig <<KC
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:26443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {client-certificate: $dir/admin.crt, client-key: $dir/admin.key}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
KC
for _ in $(seq 60); do
  kubectl --kubeconfig kubeconfig get --raw /readyz >/dev/null 2>&1 && break
  sleep 1
done
kubectl --kubeconfig kubeconfig --cache-dir "$dir/cache" api-resources -o wide >"$root/test/e2e/testdata/api-resources-$k8s_version.txt"
{ echo /api/v1; kubectl --kubeconfig kubeconfig get --raw /apis | python3 -c 'import json, sys
for g in json.load(sys.stdin)["groups"]:
    for v in g["versions"]:
        print("/apis/" + v["groupVersion"])'; } | while read -r path; do
  kubectl --kubeconfig kubeconfig get --raw "$path" | python3 -c 'import json, sys
d = json.load(sys.stdin)
for r in d["resources"]:
    print(d["groupVersion"], r["name"], r["kind"], str(r["namespaced"]).lower(), ",".join(sorted(r.get("verbs") or [])))'
done | sort >"$root/test/e2e/testdata/discovery-$k8s_version.txt"
echo "wrote test/e2e/testdata/api-resources-$k8s_version.txt and discovery-$k8s_version.txt"
