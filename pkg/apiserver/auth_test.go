package apiserver

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth-cluster/berth/pkg/auth/rbac"
	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// TestKubeletClientBinding: the policy berth reconciles binds the API server's kubelet client to
// system:kubelet-api-admin, whose rules let it read nodes and use every node subresource
// (logs, exec through proxy, stats, metrics) and nothing else.
func TestKubeletClientBinding(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(dir, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := pki.EnsureClient(dir, "kubelet-client", ca, "kube-apiserver-kubelet-client", nil)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := bootstrapPolicy(Config{KubeletClientCertFile: cert})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(policy.ClusterRoleBindings, func(b rbacv1.ClusterRoleBinding) bool {
		return b.Name == "berth:apiserver-kubelet-client"
	})
	if i < 0 {
		t.Fatal("no binding for the kubelet client")
	}
	b := policy.ClusterRoleBindings[i]
	if b.RoleRef.Name != "system:kubelet-api-admin" || len(b.Subjects) != 1 || b.Subjects[0].Kind != rbacv1.UserKind || b.Subjects[0].Name != "kube-apiserver-kubelet-client" {
		t.Fatalf("binding %+v", b)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range bootstrappolicy.Default().ClusterRoles {
		if r.Name == b.RoleRef.Name {
			rules = r.Rules
		}
	}
	node := func(verb, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{Verb: verb, Resource: "nodes", Subresource: sub, Name: "n", ResourceRequest: true}
	}
	for _, tt := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"exec through nodes/proxy", node("create", "proxy"), true},
		{"stats", node("get", "stats"), true},
		{"metrics", node("get", "metrics"), true},
		{"the node's logs", node("get", "log"), true},
		{"reading nodes", node("list", ""), true},
		{"changing nodes", node("update", ""), false},
		{"node status", node("update", "status"), false},
		{"pods of the API", authorizer.AttributesRecord{Verb: "get", Resource: "pods", ResourceRequest: true}, false},
	} {
		if got := rbac.RulesAllow(tt.attrs, rules...); got != tt.allow {
			t.Errorf("%s: allowed=%v, want %v", tt.name, got, tt.allow)
		}
	}
	if policy, err := bootstrapPolicy(Config{}); err != nil || len(policy.ClusterRoleBindings) != len(bootstrappolicy.Default().ClusterRoleBindings) {
		t.Errorf("without a kubelet client certificate the policy is upstream's: %v", err)
	}
}
