package mutatingadmissionpolicybinding

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func newBinding(mutate ...func(*admissionregistrationv1.MutatingAdmissionPolicyBinding)) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas-binding"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: "replicas",
		},
	}
	for _, m := range mutate {
		m(b)
	}
	SetDefaults(b)
	return b
}

func TestValidate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mutate func(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
		want   string
	}{
		{"valid", func(*admissionregistrationv1.MutatingAdmissionPolicyBinding) {}, ""},
		{"match resources and params", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "test"}}}
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
		}, ""},
		{"no policy", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) { b.Spec.PolicyName = "" }, "spec.policyName: Required value"},
		{"bad policy name", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) { b.Spec.PolicyName = "Bad_Name" }, `spec.policyName: Invalid value: "Bad_Name"`},
		{"delete", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"DELETE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}}
		}, `spec.matchResources.resourceRules.operations: Unsupported value: "DELETE"`},
		{"param ref", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p"}
		}, "spec.paramRef.parameterNotFoundAction: Required value"},
		{"match policy", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{MatchPolicy: ptr.To[admissionregistrationv1.MatchPolicyType]("other")}
		}, `spec.matchResources.matchPolicy: Unsupported value: "other": supported values: "Equivalent", "Exact"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Strategy.Validate(ctx, newBinding(tc.mutate))
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
	b := newBinding(func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	})
	Strategy.PrepareForCreate(ctx, b)
	changed := b.DeepCopy()
	changed.Spec.PolicyName = "other"
	Strategy.PrepareForUpdate(ctx, changed, b)
	if b.Generation != 1 || changed.Generation != 2 {
		t.Errorf("generations %d, %d", b.Generation, changed.Generation)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	b.CreationTimestamp = metav1.NewTime(now.Add(-3 * 24 * time.Hour))
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"replicas-binding", "replicas", "*/limits", "3d"}; !reflect.DeepEqual(tbl.Rows[0].Cells, want) {
		t.Errorf("row %v, want %v", tbl.Rows[0].Cells, want)
	}
}
