package e2e

import (
	"regexp"
	"testing"
	"time"
)

// TestKubectlResourceQuota: `kubectl create quota`, the quota's columns and `kubectl
// describe quota` as the resource-quota controller counts, and a create over the quota
// refused with Kubernetes' message.
func TestKubectlResourceQuota(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t) // it holds kube-root-ca.crt, a configmap

	if out := c.must(t, "create", "quota", "q", "-n", ns, "--hard=pods=2,configmaps=2"); out != "resourcequota/q created\n" {
		t.Errorf("create quota said %q", out)
	}
	used := regexp.MustCompile(`(?m)^configmaps\s+1\s+2$`)
	eventually(t, 30*time.Second, "the quota's usage", func() bool {
		return used.MatchString(c.must(t, "describe", "quota", "q", "-n", ns))
	})
	out := c.must(t, "describe", "quota", "q", "-n", ns)
	wantMatch(t, out, `^Name:\s+q$`, `^Namespace:\s+`+ns+`$`, `^Resource\s+Used\s+Hard$`, `^pods\s+0\s+2$`)

	c.must(t, "create", "configmap", "one", "-n", ns, "--from-literal=a=1")
	r := c.kubectl(t, "create", "configmap", "two", "-n", ns, "--from-literal=a=1")
	if r.code == 0 {
		t.Fatalf("a configmap over the quota was created:\n%s", r)
	}
	wantContains(t, r.stderr, `configmaps "two" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`)

	out = c.must(t, "get", "quota", "-n", ns)
	wantHeader(t, out, "NAME", "REQUEST", "LIMIT", "AGE")
	wantPrefix(t, row(t, out, "q"), "q", "configmaps:", "2/2,", "pods:", "0/2")

	// Deleting the configmap frees its share.
	c.must(t, "delete", "configmap", "one", "-n", ns)
	freed := regexp.MustCompile(`(?m)^configmaps\s+1\s+2$`)
	eventually(t, 30*time.Second, "the quota freed", func() bool {
		return freed.MatchString(c.must(t, "describe", "quota", "q", "-n", ns))
	})
}
