package clusterroleaggregation

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregated(name string, labels map[string]string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := role(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

func withRules(r *rbacv1.ClusterRole, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r.Rules = rules
	return r
}

// roleList is a lister over a fixed set of roles.
type roleList []*rbacv1.ClusterRole

func (l roleList) List(sel labels.Selector) ([]*rbacv1.ClusterRole, error) {
	var out []*rbacv1.ClusterRole
	for _, r := range l {
		if sel.Matches(labels.Set(r.Labels)) {
			out = append(out, r)
		}
	}
	return out, nil
}

var (
	toA = map[string]string{"a": "true"}
	toB = map[string]string{"b": "true"}
)

func TestAggregatedRules(t *testing.T) {
	tests := []struct {
		name    string
		role    *rbacv1.ClusterRole
		roles   roleList
		want    []rbacv1.PolicyRule
		wantErr bool
	}{
		{name: "nothing matches", role: aggregated("agg", nil, toA),
			roles: roleList{role("other", toB, rule("get", "pods"))}, want: []rbacv1.PolicyRule{}},
		{name: "matched roles by name, each rule once",
			role: aggregated("agg", nil, toA),
			roles: roleList{
				role("z", toA, rule("get", "pods"), rule("list", "pods")),
				role("m", toA, rule("list", "pods"), rule("get", "secrets")),
				role("unlabelled", nil, rule("delete", "pods")),
			},
			want: []rbacv1.PolicyRule{rule("list", "pods"), rule("get", "secrets"), rule("get", "pods")}},
		{name: "selector by selector",
			role:  aggregated("agg", nil, toB, toA),
			roles: roleList{role("a", toA, rule("get", "a")), role("b", toB, rule("get", "b"))},
			want:  []rbacv1.PolicyRule{rule("get", "b"), rule("get", "a")}},
		{name: "a role matching its own selector is skipped",
			role:  aggregated("agg", toA, toA),
			roles: roleList{aggregated("agg", toA, toA), role("a", toA, rule("get", "a"))},
			want:  []rbacv1.PolicyRule{rule("get", "a")}},
		{name: "invalid selector", wantErr: true,
			role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := aggregatedRules(tt.role, tt.roles)
			if (err != nil) != tt.wantErr {
				t.Fatalf("aggregatedRules() error = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("aggregatedRules() (-want +got):\n%s", diff)
			}
		})
	}
}

// newController builds a controller on a fake clientset holding objects, with its cache
// filled but no informer running.
func newController(t *testing.T, objects ...*rbacv1.ClusterRole) (*Controller, *fake.Clientset) {
	t.Helper()
	objs := make([]runtime.Object, len(objects))
	for i, o := range objects {
		objs[i] = o
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client.RbacV1(), factory.Rbac().V1().ClusterRoles())
	t.Cleanup(c.queue.ShutDown)
	for _, o := range objects {
		if err := factory.Rbac().V1().ClusterRoles().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	return c, client
}

// TestSyncClusterRole: an aggregated role whose rules differ gets the union applied, as the
// controller's field manager and forcing; one already equal, a plain role and a missing one
// are not written.
func TestSyncClusterRole(t *testing.T) {
	tests := []struct {
		name      string
		objects   []*rbacv1.ClusterRole
		sync      string
		wantApply bool
		wantRules []rbacv1.PolicyRule
	}{
		{name: "fills an empty aggregated role", sync: "agg", wantApply: true,
			objects:   []*rbacv1.ClusterRole{aggregated("agg", nil, toA), role("a", toA, rule("get", "pods"))},
			wantRules: []rbacv1.PolicyRule{rule("get", "pods")}},
		{name: "replaces rules written by hand", sync: "agg", wantApply: true,
			objects: []*rbacv1.ClusterRole{
				withRules(aggregated("agg", nil, toA), rule("*", "*")),
				role("a", toA, rule("get", "pods")),
			},
			wantRules: []rbacv1.PolicyRule{rule("get", "pods")}},
		{name: "already aggregated", sync: "agg",
			objects: []*rbacv1.ClusterRole{
				withRules(aggregated("agg", nil, toA), rule("get", "pods")),
				role("a", toA, rule("get", "pods")),
			}},
		{name: "selects nothing", sync: "agg", objects: []*rbacv1.ClusterRole{aggregated("agg", nil, toA)}},
		{name: "not aggregated", sync: "a", objects: []*rbacv1.ClusterRole{role("a", toA, rule("get", "pods"))}},
		{name: "gone", sync: "agg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, client := newController(t, tt.objects...)
			if err := c.syncClusterRole(context.Background(), tt.sync); err != nil {
				t.Fatal(err)
			}
			var applies []clienttesting.PatchAction
			for _, a := range client.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType {
					applies = append(applies, p)
				} else if a.GetVerb() != "get" && a.GetVerb() != "list" {
					t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
			if got := len(applies) == 1; got != tt.wantApply || len(applies) > 1 {
				t.Fatalf("%d applies, want apply %v", len(applies), tt.wantApply)
			}
			if !tt.wantApply {
				return
			}
			if !strings.Contains(string(applies[0].GetPatch()), `"name":"agg"`) {
				t.Errorf("apply patch %s does not name agg", applies[0].GetPatch())
			}
			got, err := client.RbacV1().ClusterRoles().Get(context.Background(), tt.sync, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantRules, got.Rules); diff != "" {
				t.Errorf("rules after the apply (-want +got):\n%s", diff)
			}
			if got.AggregationRule == nil {
				t.Error("the apply dropped the aggregation rule")
			}
		})
	}
}

// TestSyncClusterRoleApplyOptions: the apply is kube-controller-manager's: its field manager,
// forced.
func TestSyncClusterRoleApplyOptions(t *testing.T) {
	c, client := newController(t, aggregated("agg", nil, toA), role("a", toA, rule("get", "pods")))
	var opts metav1.PatchOptions
	client.PrependReactor("patch", "clusterroles", func(a clienttesting.Action) (bool, runtime.Object, error) {
		opts = a.(clienttesting.PatchActionImpl).PatchOptions
		return false, nil, nil
	})
	if err := c.syncClusterRole(context.Background(), "agg"); err != nil {
		t.Fatal(err)
	}
	if opts.FieldManager != FieldManager || opts.Force == nil || !*opts.Force {
		t.Errorf("apply options %+v, want field manager %s, forced", opts, FieldManager)
	}
}

// TestBootstrapRolesFillUp runs the controller on the bootstrap policy's cluster roles: view
// gets the rules of system:aggregate-to-view, edit those of view and aggregate-to-edit, admin
// those of edit and aggregate-to-admin; a CRD author's role labelled for view then reaches
// all three.
func TestBootstrapRolesFillUp(t *testing.T) {
	var objects []runtime.Object
	for _, r := range bootstrappolicy.ClusterRoles() {
		objects = append(objects, &r)
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client.RbacV1(), factory.Rbac().V1().ClusterRoles())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 5) }()

	rulesOf := func(name string) []rbacv1.PolicyRule {
		r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return r.Rules
	}
	waitCovers := func(role string, parts ...string) {
		t.Helper()
		var missing []rbacv1.PolicyRule
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			for _, p := range parts {
				var covers bool
				if covers, missing = validation.Covers(rulesOf(role), rulesOf(p)); !covers {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s lacks %v", role, missing)
		}
	}
	waitCovers("view", "system:aggregate-to-view")
	waitCovers("edit", "view", "system:aggregate-to-edit")
	waitCovers("admin", "edit", "system:aggregate-to-admin")
	if covers, _ := validation.Covers(rulesOf("view"), rulesOf("system:aggregate-to-edit")); covers {
		t.Error("view has edit's rules")
	}

	widgets := role("widgets-view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"},
		rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}})
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, widgets, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"view", "edit", "admin"} {
		waitCovers(r, "widgets-view")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}

// TestAPanicInOneRolesSyncIsRetried: the sync of "bad" panics twice; the controller lives,
// counts the panics, emits a Warning FailedSync event on the role, and aggregates it on the
// third try while "good" is served meanwhile.
func TestAPanicInOneRolesSyncIsRetried(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, name string) error {
		mu.Lock()
		calls[name]++
		n := calls[name]
		mu.Unlock()
		if name == "bad" && n <= 2 {
			var r *rbacv1.ClusterRole
			_ = r.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, name)
	}
	t.Cleanup(func() { reconcile = orig })

	client := fake.NewClientset(aggregated("bad", nil, toA), aggregated("good", nil, toA), role("a", toA, rule("get", "pods")))
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client.RbacV1(), factory.Rbac().V1().ClusterRoles())
	recorder := events.NewFakeRecorder(10)
	c.Recorder = recorder
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), factory.Rbac().V1().ClusterRoles().Informer().HasSynced)
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()
	for _, name := range []string{"good", "bad"} {
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			return err == nil && len(r.Rules) == 1, nil
		})
		if err != nil {
			t.Fatalf("%s was not aggregated: %v", name, err)
		}
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total{component=controller/%s} = %v, want %v", controllerName, got, before+2)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync internal error in controller/clusterrole-aggregation: recovered from panic") {
			t.Errorf("event %q, want a Warning FailedSync naming the panic", e)
		}
	default:
		t.Error("no event for the panics")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("the test ran out of time")
	}
}
