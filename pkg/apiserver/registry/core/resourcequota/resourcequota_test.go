package resourcequota

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func newQuota(spec corev1.ResourceQuotaSpec) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"}, Spec: spec}
}

func TestValidateResourceQuota(t *testing.T) {
	exists := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	selector := func(reqs ...corev1.ScopedResourceSelectorRequirement) *corev1.ScopeSelector {
		return &corev1.ScopeSelector{MatchExpressions: reqs}
	}
	for _, tc := range []struct {
		name string
		spec corev1.ResourceQuotaSpec
		want string // a substring of the errors; "" for valid
	}{
		{"valid", corev1.ResourceQuotaSpec{Hard: list("pods", "10", "requests.cpu", "2", "limits.memory", "1Gi", "count/deployments.apps", "3",
			"gold.storageclass.storage.k8s.io/requests.storage", "10Gi", "requests.example.com/gpu", "2", "hugepages-2Mi", "1Gi")}, ""},
		{"valid scopes", corev1.ResourceQuotaSpec{Hard: list("pods", "1", "cpu", "1"), Scopes: []corev1.ResourceQuotaScope{"NotBestEffort", "Terminating"}}, ""},
		{"valid selector", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(
			corev1.ScopedResourceSelectorRequirement{ScopeName: "PriorityClass", Operator: "In", Values: []string{"high"}})}, ""},
		{"negative", corev1.ResourceQuotaSpec{Hard: list("cpu", "-1")}, `spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"fractional count", corev1.ResourceQuotaSpec{Hard: list("pods", "1500m")}, `spec.hard[pods]: Invalid value: "1500m": must be an integer`},
		{"fractional extended", corev1.ResourceQuotaSpec{Hard: list("example.com/gpu", "500m")}, "must be an integer"},
		{"storage is not for quota", corev1.ResourceQuotaSpec{Hard: list("storage", "1Gi")}, `spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota`},
		{"unknown", corev1.ResourceQuotaSpec{Hard: list("bogus", "1")},
			`[spec.hard[bogus]: Invalid value: "bogus": must be a standard resource type or fully qualified, spec.hard[bogus]: Invalid value: "bogus": must be a standard resource for quota]`},
		{"unsupported scope", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), Scopes: []corev1.ResourceQuotaScope{"Foo"}},
			`spec.scopes: Invalid value: ["Foo"]: unsupported scope`},
		{"scope on wrong resource", corev1.ResourceQuotaSpec{Hard: list("services", "1"), Scopes: []corev1.ResourceQuotaScope{"Terminating"}},
			"spec.scopes: Invalid value: [\"Terminating\"]: unsupported scope applied to resource"},
		{"best effort with cpu", corev1.ResourceQuotaSpec{Hard: list("cpu", "1"), Scopes: []corev1.ResourceQuotaScope{"BestEffort"}},
			"unsupported scope applied to resource"},
		{"conflicting scopes", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), Scopes: []corev1.ResourceQuotaScope{"Terminating", "NotTerminating"}},
			"spec.scopes: Invalid value: [\"Terminating\",\"NotTerminating\"]: conflicting scopes"},
		{"selector operator", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(
			corev1.ScopedResourceSelectorRequirement{ScopeName: "BestEffort", Operator: "In", Values: []string{"x"}})},
			`spec.scopeSelector.matchExpressions.operator: Invalid value: "In": must be 'Exists' when scope is any of`},
		{"selector values", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(
			corev1.ScopedResourceSelectorRequirement{ScopeName: "PriorityClass", Operator: "In"})},
			"spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"},
		{"selector exists with values", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(
			corev1.ScopedResourceSelectorRequirement{ScopeName: "PriorityClass", Operator: "Exists", Values: []string{"x"}})},
			"must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"},
		{"selector bad operator", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(
			corev1.ScopedResourceSelectorRequirement{ScopeName: "PriorityClass", Operator: "Near"})},
			`spec.scopeSelector.matchExpressions.operator: Invalid value: "Near": not a valid selector operator`},
		{"selector unknown scope", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(exists("Foo"))},
			`spec.scopeSelector.matchExpressions.scopeName: Invalid value: "Foo": unsupported scope`},
		{"selector conflict", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(exists("BestEffort"), exists("NotBestEffort"))},
			"spec.scopeSelector.matchExpressions: Invalid value: null: conflicting scopes"},
		{"volume attributes class on claims", corev1.ResourceQuotaSpec{Hard: list("pods", "1"), ScopeSelector: selector(exists("VolumeAttributesClass"))},
			"unsupported scope applied to resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateResourceQuota(newQuota(tc.spec))
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
	bad := newQuota(corev1.ResourceQuotaSpec{})
	bad.Name = "Not_A_Name"
	if errs := ValidateResourceQuota(bad); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "metadata.name") {
		t.Errorf("a bad name: %v", errs)
	}
}

func TestValidateUpdates(t *testing.T) {
	old := newQuota(corev1.ResourceQuotaSpec{Hard: list("pods", "1"), Scopes: []corev1.ResourceQuotaScope{"Terminating", "NotBestEffort"}})
	old.ResourceVersion = "1"
	reordered := old.DeepCopy()
	reordered.Spec.Scopes = []corev1.ResourceQuotaScope{"NotBestEffort", "Terminating"}
	reordered.Spec.Hard = list("pods", "2")
	if errs := ValidateResourceQuotaUpdate(reordered, old); len(errs) != 0 {
		t.Errorf("the same scopes reordered: %v", errs)
	}
	changed := old.DeepCopy()
	changed.Spec.Scopes = []corev1.ResourceQuotaScope{"Terminating"}
	if errs := ValidateResourceQuotaUpdate(changed, old); len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.scopes: Invalid value: [\"Terminating\"]: field is immutable") {
		t.Errorf("changed scopes: %v", errs)
	}
	status := old.DeepCopy()
	status.Status = corev1.ResourceQuotaStatus{Hard: list("pods", "1"), Used: list("pods", "-1")}
	if errs := ValidateResourceQuotaStatusUpdate(status, old); len(errs) != 1 || errs[0].Field != "status.used[pods]" {
		t.Errorf("a negative usage: %v", errs)
	}
	status.ResourceVersion = ""
	status.Status.Used = list("pods", "0")
	if errs := ValidateResourceQuotaStatusUpdate(status, old); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "resourceVersion: Required value") {
		t.Errorf("a status update without resourceVersion: %v", errs)
	}
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	stored := newQuota(corev1.ResourceQuotaSpec{Hard: list("pods", "1")})
	stored.Status = corev1.ResourceQuotaStatus{Hard: list("pods", "1"), Used: list("pods", "1")}

	created := stored.DeepCopy()
	Strategy.PrepareForCreate(ctx, created)
	if created.Status.Hard != nil || created.Status.Used != nil {
		t.Errorf("a new quota keeps the status it was sent: %+v", created.Status)
	}
	update := stored.DeepCopy()
	update.Spec.Hard = list("pods", "5")
	update.Status = corev1.ResourceQuotaStatus{}
	Strategy.PrepareForUpdate(ctx, update, stored)
	if update.Spec.Hard.Pods().Value() != 5 || update.Status.Used.Pods().Value() != 1 {
		t.Errorf("a spec update: spec %v, status %+v; want the new spec and the old status", update.Spec.Hard, update.Status)
	}
	statusUpdate := stored.DeepCopy()
	statusUpdate.Spec.Hard = list("pods", "100")
	statusUpdate.Status.Used = list("pods", "0")
	StatusStrategy.PrepareForUpdate(ctx, statusUpdate, stored)
	if statusUpdate.Spec.Hard.Pods().Value() != 1 || statusUpdate.Status.Used.Pods().Value() != 0 {
		t.Errorf("a status update: spec %v, status %+v; want the old spec and the new status", statusUpdate.Spec.Hard, statusUpdate.Status)
	}
}

func TestSetDefaults(t *testing.T) {
	q := newQuota(corev1.ResourceQuotaSpec{Hard: list("cpu", "0.0001")})
	SetDefaults(q)
	if got := q.Spec.Hard[corev1.ResourceCPU]; got.String() != "1m" {
		t.Errorf("cpu 0.0001 defaults to %s, want 1m", got.String())
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := newTableConvertor(clocktesting.NewFakePassiveClock(now))
	q := newQuota(corev1.ResourceQuotaSpec{})
	q.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	q.Status = corev1.ResourceQuotaStatus{
		Hard: list("pods", "10", "requests.cpu", "2", "limits.cpu", "4", "limits.memory", "1Gi"),
		Used: list("pods", "1", "requests.cpu", "500m"),
	}
	tbl, err := c.ConvertToTable(context.Background(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Request,Limit,Age" {
		t.Errorf("columns %s", got)
	}
	want := []any{"q", "pods: 1/10, requests.cpu: 500m/2", "limits.cpu: 0/4, limits.memory: 0/1Gi", "90s"}
	for i, cell := range tbl.Rows[0].Cells {
		if cell != want[i] {
			t.Errorf("cell %d = %q, want %q", i, cell, want[i])
		}
	}
}
