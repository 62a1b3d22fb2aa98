package rbacbootstrap

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	rbacv1listers "k8s.io/client-go/listers/rbac/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// writes are the create, update, patch and delete actions the client saw.
func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// TestEnsureCreatesEverythingThenNothing: on an empty cluster every object of the policy is
// created (kube-public too, which nothing else creates here); a second run writes nothing.
func TestEnsureCreatesEverythingThenNothing(t *testing.T) {
	ctx := ctxFor(t)
	client := fake.NewClientset()
	policy := bootstrappolicy.Default()
	if err := Ensure(ctx, client, policy); err != nil {
		t.Fatal(err)
	}

	roles, _ := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if len(roles.Items) != len(policy.ClusterRoles) {
		t.Errorf("%d cluster roles, want %d", len(roles.Items), len(policy.ClusterRoles))
	}
	bindings, _ := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if len(bindings.Items) != len(policy.ClusterRoleBindings) {
		t.Errorf("%d cluster role bindings, want %d", len(bindings.Items), len(policy.ClusterRoleBindings))
	}
	for ns, want := range policy.Roles {
		got, _ := client.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
		if len(got.Items) != len(want) {
			t.Errorf("%d roles in %s, want %d", len(got.Items), ns, len(want))
		}
	}
	for ns, want := range policy.RoleBindings {
		got, _ := client.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
		if len(got.Items) != len(want) {
			t.Errorf("%d role bindings in %s, want %d", len(got.Items), ns, len(want))
		}
	}
	admin, err := client.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
	if err != nil || admin.AggregationRule == nil || admin.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("admin = %+v, %v; want its aggregation rule and the autoupdate annotation", admin, err)
	}

	client.ClearActions()
	if err := Ensure(ctx, client, policy); err != nil {
		t.Fatal(err)
	}
	if w := writes(client); len(w) > 0 {
		t.Errorf("a second reconcile wrote %d times, want none: %v", len(w), w)
	}
}

// TestEnsureAddsWhatIsMissingAndKeepsTheRest: a role stripped of a rule gets it back and
// keeps the rule an admin added; a binding gets its subject back and keeps the admin's; a
// role marked autoupdate=false is left as it is.
func TestEnsureAddsWhatIsMissingAndKeepsTheRest(t *testing.T) {
	ctx := ctxFor(t)
	client := fake.NewClientset()
	policy := bootstrappolicy.Default()
	if err := Ensure(ctx, client, policy); err != nil {
		t.Fatal(err)
	}
	crs := client.RbacV1().ClusterRoles()
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}

	basic, _ := crs.Get(ctx, "system:basic-user", metav1.GetOptions{})
	wantRules := basic.Rules
	basic.Rules = []rbacv1.PolicyRule{extra}
	if _, err := crs.Update(ctx, basic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	heapster, _ := crs.Get(ctx, "system:heapster", metav1.GetOptions{})
	heapster.Rules = heapster.Rules[:1]
	heapster.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	if _, err := crs.Update(ctx, heapster, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	crbs := client.RbacV1().ClusterRoleBindings()
	discovery, _ := crbs.Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	admins := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "admins"}
	discovery.Subjects = []rbacv1.Subject{admins}
	if _, err := crbs.Update(ctx, discovery, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.RbacV1().Roles("kube-system").Delete(ctx, "system:controller:token-cleaner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := Ensure(ctx, client, policy); err != nil {
		t.Fatal(err)
	}
	basic, _ = crs.Get(ctx, "system:basic-user", metav1.GetOptions{})
	// The reconcile adds the missing rules broken down (one verb on one resource each).
	if covers, missing := validation.Covers(basic.Rules, append(wantRules, extra)); !covers {
		t.Errorf("system:basic-user lacks %v after the reconcile: %v", missing, basic.Rules)
	}
	heapster, _ = crs.Get(ctx, "system:heapster", metav1.GetOptions{})
	if len(heapster.Rules) != 1 {
		t.Errorf("system:heapster with autoupdate=false has %d rules, want the 1 it was left with", len(heapster.Rules))
	}
	discovery, _ = crbs.Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	for _, name := range []string{"admins", "system:authenticated", "system:unauthenticated"} {
		if !slices.ContainsFunc(discovery.Subjects, func(s rbacv1.Subject) bool { return s.Name == name }) {
			t.Errorf("system:public-info-viewer lacks subject %s: %v", name, discovery.Subjects)
		}
	}
	if _, err := client.RbacV1().Roles("kube-system").Get(ctx, "system:controller:token-cleaner", metav1.GetOptions{}); err != nil {
		t.Errorf("the deleted role was not created again: %v", err)
	}
}

// TestEnsureGoesOnPastAFailure: one object that cannot be written fails the attempt, but the
// others are written.
func TestEnsureGoesOnPastAFailure(t *testing.T) {
	ctx := ctxFor(t)
	client := fake.NewClientset()
	client.PrependReactor("create", "clusterroles", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.CreateAction).GetObject().(*rbacv1.ClusterRole).Name == "view" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "clusterroles"}, "view", errors.New("no"))
		}
		return false, nil, nil
	})
	err := Ensure(ctx, client, bootstrappolicy.Default())
	if err == nil || !apierrors.IsForbidden(errors.Unwrap(err.(interface{ Unwrap() []error }).Unwrap()[0])) {
		t.Fatalf("Ensure() = %v, want the forbidden view", err)
	}
	if _, err := client.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{}); err != nil {
		t.Errorf("edit was not created past view's failure: %v", err)
	}
}

// TestRunRetriesUntilTheAPIIsThere: while the RBAC API answers NotFound (not served yet) or
// a reconcile panics, the hook tries again; it returns once a reconcile succeeded.
func TestRunRetriesUntilTheAPIIsThere(t *testing.T) {
	retryInterval = time.Millisecond
	t.Cleanup(func() { retryInterval = time.Second })
	ctx := ctxFor(t)
	client := fake.NewClientset()
	var lists atomic.Int32
	client.PrependReactor("list", "clusterroles", func(clienttesting.Action) (bool, runtime.Object, error) {
		switch lists.Add(1) {
		case 1, 2:
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}, "")
		case 3:
			panic("a bad object")
		}
		return false, nil, nil
	})
	done := make(chan struct{})
	go func() { defer close(done); run(ctx, client, bootstrappolicy.Default()) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("run did not return after the API came")
	}
	if n := lists.Load(); n != 4 {
		t.Errorf("%d attempts, want 4 (two NotFound, one panic, one success)", n)
	}
	if _, err := client.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Errorf("cluster-admin after run: %v", err)
	}
}

// TestRunStopsWithItsContext: a server that stops before the API is there ends the hook.
func TestRunStopsWithItsContext(t *testing.T) {
	retryInterval = time.Millisecond
	t.Cleanup(func() { retryInterval = time.Second })
	client := fake.NewClientset()
	client.PrependReactor("list", "clusterroles", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx, client, bootstrappolicy.Default()) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

// TestWaitCached: the hook's end waits for the authorizer's cache to hold the policy.
func TestWaitCached(t *testing.T) {
	policy := bootstrappolicy.Default()
	roles := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	bindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range policy.ClusterRoles {
		if err := roles.Add(&policy.ClusterRoles[i]); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(ctxFor(t), 200*time.Millisecond)
	defer cancel()
	if err := WaitCached(ctx, rbacv1listers.NewClusterRoleLister(roles), rbacv1listers.NewClusterRoleBindingLister(bindings), policy); err == nil {
		t.Fatal("WaitCached returned while the bindings are not cached")
	}
	for i := range policy.ClusterRoleBindings {
		if err := bindings.Add(&policy.ClusterRoleBindings[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := WaitCached(ctxFor(t), rbacv1listers.NewClusterRoleLister(roles), rbacv1listers.NewClusterRoleBindingLister(bindings), policy); err != nil {
		t.Fatalf("WaitCached with everything cached: %v", err)
	}
}
