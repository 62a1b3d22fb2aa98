package flowschema

import (
	"context"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	clocktesting "k8s.io/utils/clock/testing"
)

func schema(name string, mutate ...func(*flowcontrolv1.FlowSchema)) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "jane"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, Namespaces: []string{"default"},
				}},
			}},
		},
	}
	for _, m := range mutate {
		m(fs)
	}
	return fs
}

func rule(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.PolicyRulesWithSubjects {
	return &fs.Spec.Rules[0]
}

func TestSetDefaults(t *testing.T) {
	fs := schema("x")
	SetDefaults(fs)
	if fs.Spec.MatchingPrecedence != 1000 {
		t.Errorf("matchingPrecedence %d, want 1000", fs.Spec.MatchingPrecedence)
	}
}

func TestBootstrapObjectsAreDefaultedAndValid(t *testing.T) {
	for _, fs := range append(append([]*flowcontrolv1.FlowSchema(nil), bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
		d := fs.DeepCopy()
		SetDefaults(d)
		if !apiequality.Semantic.DeepEqual(d, fs) {
			t.Errorf("defaulting changes %s", fs.Name)
		}
		if errs := Validate(d); len(errs) > 0 {
			t.Errorf("%s: %v", fs.Name, errs)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   *flowcontrolv1.FlowSchema
		want []string // nil means valid
	}{
		{"valid", schema("ok"), nil},
		{"every namespace", schema("ok", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).ResourceRules[0].Namespaces = []string{"*"}
		}), nil},
		{"cluster scope", schema("ok", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).ResourceRules[0].Namespaces = nil
			rule(fs).ResourceRules[0].ClusterScope = true
		}), nil},
		{"precedence 1", schema("x", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 }),
			[]string{"spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"}},
		{"precedence too high", schema("x", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 }),
			[]string{"spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"}},
		{"negative precedence", schema("x", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = -1 }),
			[]string{"spec.matchingPrecedence: Invalid value: -1: must be a positive value"}},
		{"no level", schema("x", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" }),
			[]string{"spec.priorityLevelConfiguration.name: Required value: must reference a priority level"}},
		{"bad distinguisher", schema("x", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: "ByColour"}
		}), []string{"spec.distinguisherMethod.type: Unsupported value: ", `supported values: "ByNamespace", "ByUser"`}},
		{"no subjects", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).Subjects = nil }),
			[]string{"spec.rules[0].subjects: Required value: subjects must contain at least one value"}},
		{"no rules", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).ResourceRules = nil }),
			[]string{"spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty"}},
		{"user and group", schema("x", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).Subjects[0].Group = &flowcontrolv1.GroupSubject{Name: "g"}
		}), []string{"spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'"}},
		{"bad kind", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).Subjects[0].Kind = "Robot" }),
			[]string{`spec.rules[0].subjects[0].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User"`}},
		{"service account without namespace", schema("x", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).Subjects[0] = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "*"}}
		}), []string{"spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account"}},
		{"service account missing", schema("x", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).Subjects[0] = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount}
		}), []string{"spec.rules[0].subjects[0].serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'"}},
		{"unknown verb", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).ResourceRules[0].Verbs = []string{"get", "frobnicate"} }),
			[]string{"spec.rules[0].resourceRules[0].verbs: Unsupported value: "}},
		{"star and a verb", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).ResourceRules[0].Verbs = []string{"*", "get"} }),
			[]string{"spec.rules[0].resourceRules[0].verbs: Invalid value: ", "if '*' is present, must not specify other verbs"}},
		{"no namespaces", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).ResourceRules[0].Namespaces = nil }),
			[]string{"spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace"}},
		{"bad namespace", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).ResourceRules[0].Namespaces = []string{"Bad"} }),
			[]string{`spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: "Bad": each member of this list must be '*' or a DNS-1123 label; `}},
		{"star and a group", schema("x", func(fs *flowcontrolv1.FlowSchema) { rule(fs).ResourceRules[0].APIGroups = []string{"*", "apps"} }),
			[]string{"spec.rules[0].resourceRules[0].apiGroups: Invalid value: ", "if '*' is present, must not specify other api groups"}},
		{"bad url", schema("x", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/a*", "x", "/a//b"}}}
		}), []string{
			`spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a*": wildcard can only do suffix matching`,
			`spec.rules[0].nonResourceRules[0].nonResourceURLs[2]: Invalid value: "x": must start with slash`,
			`spec.rules[0].nonResourceRules[0].nonResourceURLs[3]: Invalid value: "/a//b": must not contain double slash`,
		}},
		{"changed catch-all", func() *flowcontrolv1.FlowSchema {
			fs := bootstrap.MandatoryFlowSchemaCatchAll.DeepCopy()
			fs.Spec.MatchingPrecedence = 9000
			return fs
		}(), []string{"spec: Invalid value: ", "spec of 'catch-all' must equal the fixed value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := tc.fs.DeepCopy()
			SetDefaults(fs)
			errs := Strategy.Validate(context.Background(), fs)
			if tc.want == nil {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			got := errs.ToAggregate()
			if got == nil {
				t.Fatalf("want %q, got valid", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("got %v, want it to contain %q", got, w)
				}
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	old := schema("x")
	SetDefaults(old)
	old.Generation = 2
	old.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse}}
	fs := old.DeepCopy()
	fs.Status = flowcontrolv1.FlowSchemaStatus{}
	fs.Spec.MatchingPrecedence = 500
	Strategy.PrepareForUpdate(context.Background(), fs, old)
	if fs.Generation != 3 || len(fs.Status.Conditions) != 1 {
		t.Errorf("generation %d, status %v; want 3 and the old status", fs.Generation, fs.Status)
	}
	create := schema("y")
	create.Status = old.Status
	Strategy.PrepareForCreate(context.Background(), create)
	if create.Generation != 1 || len(create.Status.Conditions) != 0 {
		t.Errorf("created at generation %d with status %v", create.Generation, create.Status)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := sortedConvertor{newTableConvertor(clocktesting.NewFakePassiveClock(now))}
	dangling := bootstrap.SuggestedFlowSchemaGlobalDefault.DeepCopy()
	dangling.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse}}
	list := &flowcontrolv1.FlowSchemaList{Items: []flowcontrolv1.FlowSchema{
		*bootstrap.MandatoryFlowSchemaCatchAll.DeepCopy(),
		*dangling,
		*bootstrap.MandatoryFlowSchemaExempt.DeepCopy(),
	}}
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, col := range tbl.ColumnDefinitions {
		cols = append(cols, col.Name)
	}
	if got := strings.Join(cols, " "); got != "Name PriorityLevel MatchingPrecedence DistinguisherMethod Age MissingPL" {
		t.Errorf("columns %s", got)
	}
	want := [][]any{
		{"exempt", "exempt", int64(1), "<none>", "<unknown>", "?"},
		{"global-default", "global-default", int64(9900), "ByUser", "<unknown>", "False"},
		{"catch-all", "catch-all", int64(10000), "ByUser", "<unknown>", "?"},
	}
	for i, row := range tbl.Rows {
		if !apiequality.Semantic.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d: %#v, want %#v", i, row.Cells, want[i])
		}
	}
	if list.Items[0].Name != "catch-all" {
		t.Errorf("the list itself was sorted")
	}
}
