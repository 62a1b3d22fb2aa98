package mutatingadmissionpolicy

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func newPolicy(mutate ...func(*admissionregistrationv1.MutatingAdmissionPolicy)) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "labels"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{metadata: Object.metadata{labels: {'seen': 'yes'}}}"}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	for _, m := range mutate {
		m(p)
	}
	SetDefaults(p)
	return p
}

func TestValidate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mutate func(*admissionregistrationv1.MutatingAdmissionPolicy)
		want   string
	}{
		{"valid", func(*admissionregistrationv1.MutatingAdmissionPolicy) {}, ""},
		{"variables", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "v", Expression: "'yes'"}}
			p.Spec.Mutations[0].ApplyConfiguration.Expression = "Object{metadata: Object.metadata{labels: {'seen': variables.v}}}"
		}, ""},
		{"empty", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec = admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy}
		}, "spec.matchConstraints: Required value, spec.mutations: Required value: mutations must contain at least one item"},
		{"delete", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"DELETE"}
		}, `spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE"`},
		{"no reinvocation policy", func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.ReinvocationPolicy = "" },
			"spec.reinvocationPolicy: Required value"},
		{"not an object", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations[0].ApplyConfiguration.Expression = "1 < 2"
		}, `spec.mutations[0].applyConfiguration.expression: Invalid value: "1 < 2": must evaluate to Object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Strategy.Validate(ctx, newPolicy(tc.mutate))
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestStrategyAndTable(t *testing.T) {
	ctx := context.Background()
	p := newPolicy()
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *p.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("defaults not applied: %+v", p.Spec)
	}
	Strategy.PrepareForCreate(ctx, p)
	changed := p.DeepCopy()
	changed.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	Strategy.PrepareForUpdate(ctx, changed, p)
	if p.Generation != 1 || changed.Generation != 2 {
		t.Errorf("generations %d, %d", p.Generation, changed.Generation)
	}

	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Second))
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"labels", int64(1), "<unset>", "3s"}; !reflect.DeepEqual(tbl.Rows[0].Cells, want) {
		t.Errorf("row %v, want %v", tbl.Rows[0].Cells, want)
	}
}
