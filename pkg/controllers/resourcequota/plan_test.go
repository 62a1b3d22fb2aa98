package resourcequota

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func rq(name string, spec, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       corev1.ResourceQuotaSpec{Hard: spec},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

func TestPlanStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		quota     *corev1.ResourceQuota
		counted   corev1.ResourceList
		wantUsed  corev1.ResourceList
		wantWrite bool
	}{
		{"first sync", rq("q", list("pods", "10"), nil, nil), list("pods", "2"), list("pods", "2"), true},
		{"nothing changed", rq("q", list("pods", "10"), list("pods", "10"), list("pods", "2")), list("pods", "2"), list("pods", "2"), false},
		{"usage changed", rq("q", list("pods", "10"), list("pods", "10"), list("pods", "2")), list("pods", "1"), list("pods", "1"), true},
		{"hard changed", rq("q", list("pods", "5"), list("pods", "10"), list("pods", "2")), list("pods", "2"), list("pods", "2"), true},
		// An uncounted resource (its evaluator failed) keeps its last count.
		{"count failed", rq("q", list("pods", "10", "services", "3"), list("pods", "10", "services", "3"), list("pods", "2", "services", "1")),
			list("pods", "2"), list("pods", "2", "services", "1"), false},
		// A limit removed from the spec takes its usage with it.
		{"limit removed", rq("q", list("pods", "10"), list("pods", "10", "services", "3"), list("pods", "2", "services", "1")),
			list("pods", "2"), list("pods", "2"), true},
		{"equal quantities, other forms", rq("q", list("cpu", "1"), list("cpu", "1"), list("cpu", "500m")), list("cpu", "0.5"), list("cpu", "500m"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, write := planStatus(tc.quota, tc.counted)
			if write != tc.wantWrite {
				t.Errorf("write = %v, want %v", write, tc.wantWrite)
			}
			if !quota.Equals(status.Used, tc.wantUsed) {
				t.Errorf("used = %v, want %v", status.Used, tc.wantUsed)
			}
			if !quota.Equals(status.Hard, tc.quota.Spec.Hard) {
				t.Errorf("hard = %v, want the spec's %v", status.Hard, tc.quota.Spec.Hard)
			}
		})
	}
}

// countable is a matching function for pods and services.
func countable(names []corev1.ResourceName) []corev1.ResourceName {
	return quota.Intersection(names, []corev1.ResourceName{"pods", "services", "count/pods"})
}

func TestMissingUsage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quota *corev1.ResourceQuota
		want  bool
	}{
		{"new", rq("q", list("pods", "1"), nil, nil), true},
		{"spec changed", rq("q", list("pods", "2"), list("pods", "1"), list("pods", "0")), true},
		{"usage missing", rq("q", list("pods", "1", "services", "1"), list("pods", "1", "services", "1"), list("pods", "0")), true},
		// Nothing can count it: waiting for a count would wait for ever.
		{"uncountable usage missing", rq("q", list("pods", "1", "example.com/foo", "1"), list("pods", "1", "example.com/foo", "1"), list("pods", "0")), false},
		{"in step", rq("q", list("pods", "1"), list("pods", "1"), list("pods", "1")), false},
	} {
		if got := missingUsage(tc.quota, countable); got != tc.want {
			t.Errorf("%s: missingUsage = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestToReplenish(t *testing.T) {
	quotas := []*corev1.ResourceQuota{
		rq("pods", nil, list("pods", "1"), nil),
		rq("configmaps", nil, list("configmaps", "1"), nil),
		rq("unsynced", list("pods", "1"), nil, nil),
		rq("object-count", nil, list("count/pods", "1", "configmaps", "1"), nil),
	}
	var got []string
	for _, q := range toReplenish(quotas, countable) {
		got = append(got, q.Name)
	}
	if want := []string{"pods", "object-count"}; !slices.Equal(got, want) {
		t.Errorf("toReplenish = %v, want %v", got, want)
	}
}

func TestQuotableResources(t *testing.T) {
	verbs := metav1.Verbs{"create", "list", "watch", "delete", "get"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Verbs: verbs},
			{Name: "events", Namespaced: true, Verbs: verbs},
			{Name: "bindings", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Verbs: verbs},
			{Name: "deployments/scale", Namespaced: true, Verbs: metav1.Verbs{"get", "update"}},
		}},
	}
	ignored := map[schema.GroupResource]struct{}{{Resource: "events"}: {}}
	always := []schema.GroupVersionResource{{Version: "v1", Resource: "secrets"}}
	var got []string
	for _, gvr := range quotableResources(lists, ignored, always) {
		got = append(got, gvr.String())
	}
	want := []string{"/v1, Resource=pods", "/v1, Resource=secrets", "apps/v1, Resource=deployments"}
	if !slices.Equal(got, want) {
		t.Errorf("quotableResources = %v, want %v", got, want)
	}
}

func TestMonitorChanges(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsV2 := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
	metrics := schema.GroupVersionResource{Group: "metrics.example.com", Version: "v1", Resource: "samples"}
	gvrs := func(r ...schema.GroupVersionResource) []schema.GroupVersionResource { return r }
	down := map[schema.GroupVersion]error{metrics.GroupVersion(): errors.New("unavailable")}
	for _, tc := range []struct {
		name                string
		running, found      []schema.GroupVersionResource
		failed              map[schema.GroupVersion]error
		wantStart, wantStop []schema.GroupVersionResource
	}{
		{name: "first discovery", found: gvrs(widgets, pods, deployments), wantStart: gvrs(pods, deployments, widgets)},
		{name: "nothing changed", running: gvrs(pods, widgets), found: gvrs(widgets, pods)},
		{name: "a CRD created", running: gvrs(pods), found: gvrs(pods, widgets), wantStart: gvrs(widgets)},
		{name: "a CRD deleted", running: gvrs(pods, widgets), found: gvrs(pods), wantStop: gvrs(widgets)},
		{name: "a new preferred version", running: gvrs(pods, widgets), found: gvrs(pods, widgetsV2),
			wantStart: gvrs(widgetsV2), wantStop: gvrs(widgets)},
		// A group discovery failed to list keeps its monitors; the others follow discovery.
		{name: "partial failure", running: gvrs(pods, metrics, widgets), found: gvrs(pods, deployments), failed: down,
			wantStart: gvrs(deployments), wantStop: gvrs(widgets)},
		// A failed group not yet watched is not started from nothing.
		{name: "partial failure, group never seen", running: gvrs(pods), found: gvrs(pods), failed: down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, stop := monitorChanges(tc.running, tc.found, tc.failed)
			if !slices.Equal(start, tc.wantStart) || !slices.Equal(stop, tc.wantStop) {
				t.Errorf("monitorChanges = start %v, stop %v; want start %v, stop %v", start, stop, tc.wantStart, tc.wantStop)
			}
		})
	}
}
