package validatingadmissionpolicybinding

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

func newBinding(mutate ...func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "replicas",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
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
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		want   string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {}, ""},
		{"match resources and params", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "test"}}}
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
		}, ""},
		{"no policy", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.PolicyName = "" }, "spec.policyName: Required value"},
		{"bad policy name", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.PolicyName = "Bad_Name" }, `spec.policyName: Invalid value: "Bad_Name"`},
		{"no actions", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.ValidationActions = nil },
			"spec.validationActions: Required value: at least one validation action is required"},
		{"param ref", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p"}
		}, "spec.paramRef.parameterNotFoundAction: Required value"},
		{"match policy", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
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
	b := newBinding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	})
	Strategy.PrepareForCreate(ctx, b)
	changed := b.DeepCopy()
	changed.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
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
