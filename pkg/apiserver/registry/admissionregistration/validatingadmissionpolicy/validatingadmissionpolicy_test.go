package validatingadmissionpolicy

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

func newPolicy(mutate ...func(*admissionregistrationv1.ValidatingAdmissionPolicy)) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5"}},
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
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		want   string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingAdmissionPolicy) {}, ""},
		{"variables and params", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "max", Expression: "int(params.data.max)"}}
			p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= variables.max", MessageExpression: "'at most ' + string(variables.max)"}}
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "has-params", Expression: "params != null"}}
		}, ""},
		{"no validations", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.Validations = nil },
			"spec.validations: Required value: validations or auditAnnotations must contain at least one item, spec.auditAnnotations: Required value"},
		{"no match constraints", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil }, "spec.matchConstraints: Required value"},
		{"no resource rules", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = nil
		},
			"spec.matchConstraints.resourceRules: Required value"},
		{"bad expression", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.x in [1, 2, "
		}, `spec.validations[0].expression: Invalid value: "object.x in [1, 2, ": compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>`},
		{"unknown variable", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "foo", Expression: "1"}, {Name: "bar", Expression: "variables.baz + 1"}}
		}, `spec.variables[1].expression: Invalid value: "variables.baz + 1": compilation failed: ERROR: <input>:1:10: undefined field 'baz'`},
		{"params without paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "params != null"}}
		}, "undeclared reference to 'params'"},
		{"failure policy", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr.To[admissionregistrationv1.FailurePolicyType]("other")
		}, `spec.failurePolicy: Unsupported value: "other": supported values: "Fail", "Ignore"`},
		{"duplicate audit annotation", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "a", ValueExpression: "'x'"}, {Key: "a", ValueExpression: "'y'"}}
		}, `spec.auditAnnotations[1].key: Duplicate value: "a"`},
		{"too many audit annotations", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			for i := range 21 {
				p.Spec.AuditAnnotations = append(p.Spec.AuditAnnotations, admissionregistrationv1.AuditAnnotation{Key: string(rune('a' + i)), ValueExpression: "'x'"})
			}
		}, "must not have more than 20 auditAnnotations"},
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

// TestUpdateRatchets: unchanged match conditions are not compiled again on update (they may
// predate a library's removal), changed ones are.
func TestUpdateRatchets(t *testing.T) {
	ctx := context.Background()
	old := newPolicy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "6"}}
	})
	update := old.DeepCopy()
	update.Spec.Validations[0].Expression = "object.spec.replicas <= 3"
	if errs := Strategy.ValidateUpdate(ctx, update, old); len(errs) > 0 {
		t.Errorf("unchanged match conditions refused: %v", errs)
	}
	update.Spec.MatchConditions[0].Name = "d"
	if errs := Strategy.ValidateUpdate(ctx, update, old); len(errs) == 0 {
		t.Error("changed match conditions not checked")
	}
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	p := newPolicy()
	p.Status.ObservedGeneration = 7
	Strategy.PrepareForCreate(ctx, p)
	if p.Generation != 1 || p.Status.ObservedGeneration != 0 {
		t.Errorf("create: generation %d, status %+v", p.Generation, p.Status)
	}
	p.Status.ObservedGeneration = 1
	changed := p.DeepCopy()
	changed.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	changed.Status.ObservedGeneration = 9
	Strategy.PrepareForUpdate(ctx, changed, p)
	if changed.Generation != 2 || changed.Status.ObservedGeneration != 1 {
		t.Errorf("spec update: generation %d, status %+v", changed.Generation, changed.Status)
	}

	status := p.DeepCopy()
	status.Spec.Validations = nil
	status.Labels = map[string]string{"a": "b"}
	status.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 1, TypeChecking: &admissionregistrationv1.TypeChecking{
		ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression", Warning: "w"}}}}
	StatusStrategy.PrepareForUpdate(ctx, status, p)
	if len(status.Spec.Validations) != 1 || status.Labels != nil || status.Generation != 1 {
		t.Errorf("status update changed spec or metadata: %+v", status)
	}
	if errs := StatusStrategy.ValidateUpdate(ctx, status, p); len(errs) > 0 {
		t.Errorf("valid status refused: %v", errs)
	}
	status.Status.TypeChecking.ExpressionWarnings = []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[foo]"}}
	errs := StatusStrategy.ValidateUpdate(ctx, status, p).ToAggregate()
	if errs == nil || !strings.Contains(errs.Error(), "status.typeChecking.expressionWarnings[0].warning: Required value") ||
		!strings.Contains(errs.Error(), "invalid JSONPath: invalid array index foo") {
		t.Errorf("bad warnings: %v", errs)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a := newPolicy()
	a.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	b := newPolicy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Name = "params"
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	})
	b.CreationTimestamp = a.CreationTimestamp
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(),
		&admissionregistrationv1.ValidatingAdmissionPolicyList{Items: []admissionregistrationv1.ValidatingAdmissionPolicy{*a, *b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Validations", "ParamKind", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v", names)
	}
	want := [][]any{{"replicas", int64(1), "<unset>", "60s"}, {"params", int64(1), "v1/ConfigMap", "60s"}}
	for i := range want {
		if !reflect.DeepEqual(tbl.Rows[i].Cells, want[i]) {
			t.Errorf("row %d: %v, want %v", i, tbl.Rows[i].Cells, want[i])
		}
	}
}
