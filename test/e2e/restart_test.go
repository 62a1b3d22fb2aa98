package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRestart: berth up stops cleanly on SIGTERM, and a second berth up on the same data dir
// (same ports) serves every object with its UID, at the same address, with the same admin
// kubeconfig working.
func TestRestart(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "up", t.TempDir())
	ns := c.newNamespace(t)
	const node = "e2e-restart-node"
	manifests := podManifest(ns, "kept", "busybox:1.36") + "---\n" +
		fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  namespace: %s\ndata:\n  k: v\n", ns) + "---\n" +
		fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: kept\n  namespace: %s\nstringData:\n  k: v\n", ns) + "---\n" +
		fmt.Sprintf("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: kept\n  namespace: %s\nspec:\n  holderIdentity: me\n", ns) + "---\n" +
		fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n", node)
	c.mustIn(t, manifests, "apply", "-f", "-")
	objects := []string{"pod/kept", "configmap/kept", "secret/kept", "lease/kept", "node/" + node, "namespace/" + ns, "serviceaccount/default"}
	uids := func() map[string]string {
		m := map[string]string{}
		for _, o := range objects {
			m[o] = c.must(t, "get", o, "-n", ns, "-o", "jsonpath={.metadata.uid}")
		}
		return m
	}
	before := uids()
	rvBefore, _ := strconv.Atoi(c.must(t, "get", "configmap", "kept", "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"))

	start := time.Now()
	if err := c.stop(); err != nil {
		t.Fatalf("berth up did not stop cleanly on SIGTERM: %v", err)
	}
	t.Logf("berth up stopped in %s", time.Since(start).Round(time.Millisecond))
	if r := c.kubectl(t, "get", "pods", "-n", ns); r.code == 0 || !strings.Contains(r.stderr, "refused") {
		t.Errorf("kubectl against a stopped berth:\n%s", r)
	}

	c.startOrFail(t)
	after := uids()
	for _, o := range objects {
		if before[o] == "" || after[o] != before[o] {
			t.Errorf("%s: uid %q before the restart, %q after", o, before[o], after[o])
		}
	}
	wantPrefix(t, row(t, c.must(t, "get", "pods", "-n", ns), "kept"), "kept", "0/1", "Pending", "0")
	if out := c.must(t, "get", "configmap", "kept", "-n", ns, "-o", "jsonpath={.data.k}"); out != "v" {
		t.Errorf("config map data after the restart: %q", out)
	}
	// Writes go on, with resourceVersions past the old ones (etcd's revision was kept).
	c.must(t, "label", "configmap", "kept", "-n", ns, "after=restart")
	rvAfter, _ := strconv.Atoi(c.must(t, "get", "configmap", "kept", "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"))
	if rvAfter <= rvBefore {
		t.Errorf("resourceVersion %d after the restart, want more than %d", rvAfter, rvBefore)
	}
	if err := c.stop(); err != nil {
		t.Errorf("the second berth up did not stop cleanly: %v", err)
	}
}
