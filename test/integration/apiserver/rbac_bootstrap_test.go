package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// TestBootstrapPolicy: once the API server is ready, every object of the bootstrap policy
// exists and /readyz shows the rbac/bootstrap-roles hook done; the aggregation controller has
// filled admin, edit and view. A restart writes nothing, except that a role stripped of a
// rule gets it back.
func TestBootstrapPolicy(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	policy := bootstrappolicy.Default()

	first := framework.Start(t, framework.Options{DataDir: dir})
	if _, err := first.Client.Discovery().ServerResourcesForGroupVersion(rbacv1.SchemeGroupVersion.String()); err != nil {
		t.Fatalf("%s is not served: %v", rbacv1.SchemeGroupVersion, err)
	}
	readyz, err := first.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err != nil || !strings.Contains(string(readyz), "[+]poststarthook/rbac/bootstrap-roles ok") {
		t.Errorf("/readyz?verbose = %s, %v; want the rbac/bootstrap-roles hook done", readyz, err)
	}
	resourceVersions(t, ctx, first.Client, policy) // all there as soon as the server is ready
	waitForAggregation(t, ctx, first.Client)
	before := resourceVersions(t, ctx, first.Client, policy) // with admin, edit and view filled

	basic, err := first.Client.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := basic.Rules
	basic.Rules = basic.Rules[1:]
	if _, err := first.Client.RbacV1().ClusterRoles().Update(ctx, basic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := framework.Start(t, framework.Options{DataDir: dir})
	basic, err = second.Client.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if covers, missing := validation.Covers(basic.Rules, want); !covers {
		t.Errorf("system:basic-user after the restart lacks %v", missing)
	}
	waitForAggregation(t, ctx, second.Client)
	after := resourceVersions(t, ctx, second.Client, policy)
	for key, rv := range before {
		if key != "clusterrole/system:basic-user" && after[key] != rv {
			t.Errorf("%s changed across the restart (resourceVersion %s → %s)", key, rv, after[key])
		}
	}
}

// resourceVersions gets every object of the policy, failing the test for a missing one.
func resourceVersions(t *testing.T, ctx context.Context, client kubernetes.Interface, p bootstrappolicy.Policy) map[string]string {
	t.Helper()
	rbac := client.RbacV1()
	out := map[string]string{}
	record := func(key string, m metav1.Object, err error) {
		if err != nil {
			t.Errorf("%s: %v", key, err)
			return
		}
		out[key] = m.GetResourceVersion()
	}
	for _, r := range p.ClusterRoles {
		got, err := rbac.ClusterRoles().Get(ctx, r.Name, metav1.GetOptions{})
		record("clusterrole/"+r.Name, got, err)
	}
	for _, b := range p.ClusterRoleBindings {
		got, err := rbac.ClusterRoleBindings().Get(ctx, b.Name, metav1.GetOptions{})
		record("clusterrolebinding/"+b.Name, got, err)
	}
	for ns, roles := range p.Roles {
		for _, r := range roles {
			got, err := rbac.Roles(ns).Get(ctx, r.Name, metav1.GetOptions{})
			record("role/"+ns+"/"+r.Name, got, err)
		}
	}
	for ns, bindings := range p.RoleBindings {
		for _, b := range bindings {
			got, err := rbac.RoleBindings(ns).Get(ctx, b.Name, metav1.GetOptions{})
			record("rolebinding/"+ns+"/"+b.Name, got, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// waitForAggregation waits until the clusterrole-aggregation controller has given view the
// rules of system:aggregate-to-view, edit those of view and system:aggregate-to-edit, and
// admin those of edit and system:aggregate-to-admin.
func waitForAggregation(t *testing.T, ctx context.Context, client kubernetes.Interface) {
	t.Helper()
	get := func(name string) []rbacv1.PolicyRule {
		r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return r.Rules
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, c := range []struct{ role, part string }{
			{"view", "system:aggregate-to-view"},
			{"edit", "view"}, {"edit", "system:aggregate-to-edit"},
			{"admin", "edit"}, {"admin", "system:aggregate-to-admin"},
		} {
			part := get(c.part)
			if covers, _ := validation.Covers(get(c.role), part); !covers || len(part) == 0 {
				last = c.role + " lacks the rules of " + c.part
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("aggregation: %s", last)
	}
}
