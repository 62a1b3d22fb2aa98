package poddisruptionbudget

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func newPDB(mutate ...func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	min := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &min,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 5},
	}
	for _, m := range mutate {
		m(pdb)
	}
	Strategy.PrepareForCreate(context.Background(), pdb)
	return pdb
}

func TestValidate(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	tests := []struct {
		name   string
		mutate func(*policyv1.PodDisruptionBudget)
		want   string
	}{
		{"valid", func(*policyv1.PodDisruptionBudget) {}, ""},
		{"percent", func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = pct("50%") }, ""},
		{"max unavailable", func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, num(1) }, ""},
		{"both", func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = num(1) }, "spec: Invalid value: "},
		{"both message", func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = num(1) }, "minAvailable and maxUnavailable cannot be both set"},
		{"negative", func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = num(-1) },
			"spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"},
		{"over 100%", func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, pct("101%") },
			`spec.maxUnavailable: Invalid value: "101%": must not be greater than 100%`},
		{"not a percent", func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = pct("half") },
			`spec.minAvailable: Invalid value: "half": a valid percent string must be a numeric string followed by an ending '%'`},
		{"bad selector", func(p *policyv1.PodDisruptionBudget) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, `spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{"eviction policy", func(p *policyv1.PodDisruptionBudget) {
			p.Spec.UnhealthyPodEvictionPolicy = ptr.To[policyv1.UnhealthyPodEvictionPolicyType]("Never")
		}, `spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Strategy.Validate(context.Background(), newPDB(tt.mutate)).ToAggregate()
			switch {
			case tt.want == "" && errs != nil:
				t.Errorf("unexpected errors %v", errs)
			case tt.want != "" && (errs == nil || !strings.Contains(errs.Error(), tt.want)):
				t.Errorf("errors %v\nwant one with %q", errs, tt.want)
			}
		})
	}
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	pdb := newPDB()
	if pdb.Status.DisruptionsAllowed != 0 || pdb.Generation != 1 {
		t.Errorf("create kept status %+v / generation %d", pdb.Status, pdb.Generation)
	}
	if Strategy.AllowUnconditionalUpdate(ctx) || StatusStrategy.AllowUnconditionalUpdate(ctx) {
		t.Error("budget updates must name a resourceVersion, as upstream")
	}
	pdb.Status.DisruptionsAllowed = 1
	changed := pdb.DeepCopy()
	changed.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
	changed.Status.DisruptionsAllowed = 9
	Strategy.PrepareForUpdate(ctx, changed, pdb)
	if changed.Generation != 2 || changed.Status.DisruptionsAllowed != 1 {
		t.Errorf("spec update: generation %d, status %+v", changed.Generation, changed.Status)
	}

	status := pdb.DeepCopy()
	status.Spec.MinAvailable = nil
	status.Status = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, DisruptedPods: map[string]metav1.Time{"p": metav1.Now()}, ObservedGeneration: 1}
	StatusStrategy.PrepareForUpdate(ctx, status, pdb)
	if status.Spec.MinAvailable == nil || len(StatusStrategy.ValidateUpdate(ctx, status, pdb)) > 0 {
		t.Errorf("status update: spec %+v, errors %v", status.Spec, StatusStrategy.ValidateUpdate(ctx, status, pdb))
	}
	status.Status.DisruptionsAllowed = -1
	if errs := StatusStrategy.ValidateUpdate(ctx, status, pdb).ToAggregate(); errs == nil ||
		!strings.Contains(errs.Error(), "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0") {
		t.Errorf("negative disruptionsAllowed: %v", errs)
	}
	status.Status.DisruptionsAllowed = 0
	status.Status.Conditions = []metav1.Condition{{Type: "DisruptionAllowed"}}
	if errs := StatusStrategy.ValidateUpdate(ctx, status, pdb).ToAggregate(); errs == nil || !strings.Contains(errs.Error(), "status.conditions[0].status: Required value") {
		t.Errorf("bad condition: %v", errs)
	}
}

// TestV1beta1Label: the v1beta1 "match none" marker is stripped from user selectors, but the
// marker alone (policy/v1's spelling of "match none") is kept.
func TestV1beta1Label(t *testing.T) {
	marker := metav1.LabelSelectorRequirement{Key: v1beta1EmptySelectorLabel, Operator: metav1.LabelSelectorOpExists}
	mixed := newPDB(func(p *policyv1.PodDisruptionBudget) {
		p.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{marker}
	})
	if len(mixed.Spec.Selector.MatchExpressions) != 0 {
		t.Errorf("marker kept beside matchLabels: %+v", mixed.Spec.Selector)
	}
	alone := newPDB(func(p *policyv1.PodDisruptionBudget) {
		p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{marker}}
	})
	if len(alone.Spec.Selector.MatchExpressions) != 1 {
		t.Errorf("match-none selector stripped: %+v", alone.Spec.Selector)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a := newPDB()
	a.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
	a.Status.DisruptionsAllowed = 2
	b := newPDB(func(p *policyv1.PodDisruptionBudget) {
		p.Name = "pct"
		p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, ptr.To(intstr.FromString("25%"))
	})
	b.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(),
		&policyv1.PodDisruptionBudgetList{Items: []policyv1.PodDisruptionBudget{*a, *b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v", names)
	}
	want := [][]any{{"web", "1", "N/A", int64(2), "3h"}, {"pct", "N/A", "25%", int64(0), "60s"}}
	for i := range want {
		if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("row %d: %v, want %v", i, got, want[i])
		}
	}
}
