package validation

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// check fails the test unless errs is empty (want "") or has an error containing want.
func check(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	switch {
	case want == "" && len(errs) > 0:
		t.Errorf("want valid, got %v", errs)
	case want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), want)):
		t.Errorf("got %v\nwant an error with %q", errs, want)
	}
}

func rule(ops []admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
		APIGroups: []string{"a"}, APIVersions: []string{"v1"}, Resources: resources}}
}

var create = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}

func TestValidateRuleWithOperations(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		want string
	}{
		{"valid", rule(create, "pods", "pods/status"), ""},
		{"subresource wildcards", rule(create, "*/*"), ""},
		{"no operations", rule(nil, "a"), "rules[0].operations: Required value"},
		{"wildcard and more operations", rule([]admissionregistrationv1.OperationType{"*", "CREATE"}, "a"), "if '*' is present, must not specify other operations"},
		{"unknown operation", rule([]admissionregistrationv1.OperationType{"PATCH"}, "a"),
			`rules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`},
		{"double wildcard and more", rule(create, "*/*", "a"), `rules[0].resources: Invalid value: ["*/*","a"]: if '*/*' is present, must not specify other resources`},
		{"resource wildcard overlap", rule(create, "a/*", "a/x"), `rules[0].resources[1]: Invalid value: "a/x": if 'a/*' is present, must not specify a/x`},
		{"subresource wildcard overlap", rule(create, "*/a", "x/a"), `rules[0].resources[1]: Invalid value: "x/a": if '*/a' is present, must not specify x/a`},
		{"wildcard and plain", rule(create, "*", "a"), "if '*' is present, must not specify other resources without subresources"},
		{"no resources", rule(create), "rules[0].resources: Required value"},
		{"empty resource", rule(create, ""), "rules[0].resources[0]: Required value"},
		{"no versions", admissionregistrationv1.RuleWithOperations{Operations: create, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, Resources: []string{"pods"}}}, "rules[0].apiVersions: Required value"},
		{"wildcard group and more", admissionregistrationv1.RuleWithOperations{Operations: create, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"*", "apps"}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}, "if '*' is present, must not specify other API groups"},
		{"bad scope", admissionregistrationv1.RuleWithOperations{Operations: create, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To[admissionregistrationv1.ScopeType]("Global")}},
			`rules[0].scope: Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, ValidateRuleWithOperations(&tc.rule, field.NewPath("rules").Index(0)), tc.want)
		})
	}
}

// testWebhooks returns a valid ValidatingWebhook, defaulted, with mutate applied.
func testWebhooks(mutate func(*admissionregistrationv1.ValidatingWebhook)) []admissionregistrationv1.ValidatingWebhook {
	h := admissionregistrationv1.ValidatingWebhook{
		Name:                    "webhook.k8s.io",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/hook")},
		Rules:                   []admissionregistrationv1.RuleWithOperations{rule(create, "pods")},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
	hooks := []admissionregistrationv1.ValidatingWebhook{h}
	SetWebhookDefaults(ValidatingWebhooks(hooks)[0])
	if mutate != nil {
		mutate(&hooks[0])
	}
	return hooks
}

func TestValidateWebhooks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingWebhook)
		want   string
	}{
		{"valid", nil, ""},
		{"service", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr.To("/validate")}}
		}, ""},
		{"name not qualified", func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "k8s.io" },
			`webhooks[0].name: Invalid value: "k8s.io": should be a domain with at least three segments separated by dots`},
		{"no client config", func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = nil },
			"webhooks[0].clientConfig: Required value: exactly one of url or service is required"},
		{"http url", func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("http://example.com") },
			`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme`},
		{"url without host", func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("https:///x") },
			`webhooks[0].clientConfig.url: Invalid value: "": host must be specified`},
		{"url with query", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.URL = ptr.To("https://example.com/x?arg=value")
		},
			`"arg=value": query parameters are not permitted`},
		{"bad service path", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr.To("foo/")}}
		}, `clientConfig.service.path: Invalid value: "foo/": must start with a '/'`},
		{"bad service port", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](65536)}}
		}, `Invalid value: 65536: port is not valid: must be between 1 and 65535, inclusive`},
		{"no side effects", func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil },
			"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"},
		{"some side effects", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		},
			`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`},
		{"no review versions", func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = nil },
			"webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"},
		{"unknown review version", func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"invalid-v1"} },
			`webhooks[0].admissionReviewVersions: Invalid value: ["invalid-v1"]: must include at least one of v1, v1beta1`},
		{"duplicate review version", func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v1", "v1"} },
			`webhooks[0].admissionReviewVersions[1]: Invalid value: "v1": duplicate version`},
		{"bad review version", func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v1", "0v"} },
			`Invalid value: "0v": a DNS-1035 label`},
		{"timeout", func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](31) },
			"webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"},
		{"failure policy", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.FailurePolicy = ptr.To[admissionregistrationv1.FailurePolicyType]("other")
		},
			`webhooks[0].failurePolicy: Unsupported value: "other": supported values: "Fail", "Ignore"`},
		{"match policy", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchPolicy = ptr.To[admissionregistrationv1.MatchPolicyType]("other")
		},
			`webhooks[0].matchPolicy: Unsupported value: "other": supported values: "Equivalent", "Exact"`},
		{"bad selector value", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "-bad-"}}
		}, `webhooks[0].objectSelector.matchLabels: Invalid value: "-bad-"`},
		{"match condition syntax", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.x in [1, 2,"}}
		}, `webhooks[0].matchConditions[0].expression: Invalid value: "object.x in [1, 2,": compilation failed: ERROR: <input>:1:19: Syntax error: missing ']' at '<EOF>'`},
		{"match condition type", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "6"}}
		}, `webhooks[0].matchConditions[0].expression: Invalid value: "6": must evaluate to bool`},
		{"match condition params", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "params.x"}}
		}, "undeclared reference to 'params'"},
		{"match condition authorizer", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "authorizer.group('').resource('pods').check('get').allowed() && request.userInfo.username != 'x'"}}
		}, ""},
		{"match condition name", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "-hello", Expression: "true"}, {Expression: "true"}}
		}, `webhooks[0].matchConditions[0].name: Invalid value: "-hello": name part must consist of alphanumeric characters`},
		{"match condition no name", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Expression: "true"}}
		}, "webhooks[0].matchConditions[0].name: Required value"},
		{"match condition duplicate", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "true"}, {Name: "c", Expression: "true"}}
		}, `webhooks[0].matchConditions[1].name: Duplicate value: "c"`},
		{"too many match conditions", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = make([]admissionregistrationv1.MatchCondition, 65)
		}, "webhooks[0].matchConditions: Too many: 65: must have at most 64 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, ValidateWebhooks(ValidatingWebhooks(testWebhooks(tc.mutate)), NewWebhookOptions()), tc.want)
		})
	}

	// The swapped arguments of upstream's service check: a missing name is reported as the
	// namespace.
	hooks := testWebhooks(func(h *admissionregistrationv1.ValidatingWebhook) {
		h.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns"}}
	})
	check(t, ValidateWebhooks(ValidatingWebhooks(hooks), NewWebhookOptions()), "webhooks[0].clientConfig.service.namespace: Required value")

	dup := append(testWebhooks(nil), testWebhooks(nil)...)
	check(t, ValidateWebhooks(ValidatingWebhooks(dup), NewWebhookOptions()), `webhooks[1].name: Duplicate value: "webhook.k8s.io"`)
}

// TestUpdateWebhookOptions: an update keeps what the stored configuration already had
// (side effects, duplicate names, unknown review versions, loose selectors, match conditions),
// and refuses it when the stored one did not have it.
func TestUpdateWebhookOptions(t *testing.T) {
	loose := func(h *admissionregistrationv1.ValidatingWebhook) {
		h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		h.AdmissionReviewVersions = []string{"v0"}
		h.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{"-bad-"}}}}
		h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "6"}}
	}
	old := append(testWebhooks(loose), testWebhooks(loose)...)
	updated := append(testWebhooks(loose), testWebhooks(loose)...)
	updated[0].TimeoutSeconds = ptr.To[int32](20)
	check(t, ValidateWebhooks(ValidatingWebhooks(updated), UpdateWebhookOptions(ValidatingWebhooks(updated), ValidatingWebhooks(old))), "")

	strict := append(testWebhooks(nil), testWebhooks(func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "other.k8s.io" })...)
	errs := ValidateWebhooks(ValidatingWebhooks(updated), UpdateWebhookOptions(ValidatingWebhooks(updated), ValidatingWebhooks(strict)))
	for _, want := range []string{"webhooks[0].sideEffects: Unsupported value", "must include at least one of v1, v1beta1",
		`webhooks[1].name: Duplicate value`, "webhooks[0].objectSelector.matchExpressions[0].values[0]", "must evaluate to bool"} {
		check(t, errs, want)
	}
}

func TestSetWebhookDefaults(t *testing.T) {
	hooks := []admissionregistrationv1.ValidatingWebhook{{
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{}},
		Rules:        []admissionregistrationv1.RuleWithOperations{{}},
	}}
	SetWebhookDefaults(ValidatingWebhooks(hooks)[0])
	h := hooks[0]
	if *h.FailurePolicy != admissionregistrationv1.Fail || *h.MatchPolicy != admissionregistrationv1.Equivalent ||
		h.NamespaceSelector == nil || h.ObjectSelector == nil || *h.TimeoutSeconds != 10 ||
		*h.ClientConfig.Service.Port != 443 || *h.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults not applied: %+v", h)
	}
	m := &admissionregistrationv1.MatchResources{ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}}}
	SetMatchResourcesDefaults(m)
	if *m.MatchPolicy != admissionregistrationv1.Equivalent || m.NamespaceSelector == nil || m.ObjectSelector == nil ||
		*m.ExcludeResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("match resources defaults not applied: %+v", m)
	}
}

func TestValidateParamKindAndRef(t *testing.T) {
	p := field.NewPath("spec", "paramKind")
	check(t, ValidateParamKind(&admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "ReplicaLimit"}, p), "")
	check(t, ValidateParamKind(&admissionregistrationv1.ParamKind{APIVersion: "example.com/v1"}, p), "spec.paramKind.kind: Required value")
	check(t, ValidateParamKind(&admissionregistrationv1.ParamKind{APIVersion: "test.example.com", Kind: "K"}, p), `spec.paramKind.apiVersion: Invalid value: "test.example.com"`)
	check(t, ValidateParamKind(&admissionregistrationv1.ParamKind{APIVersion: "a/b/c", Kind: "K"}, p), "unexpected GroupVersion string: a/b/c")
	check(t, ValidateParamKind(&admissionregistrationv1.ParamKind{APIVersion: "!!!/v1", Kind: "K"}, p), `spec.paramKind.apiVersion: Invalid value: "!!!"`)

	r := field.NewPath("spec", "paramRef")
	deny := ptr.To(admissionregistrationv1.DenyAction)
	check(t, ValidateParamRef(&admissionregistrationv1.ParamRef{Name: "p", ParameterNotFoundAction: deny}, r), "")
	check(t, ValidateParamRef(&admissionregistrationv1.ParamRef{Name: "p"}, r), "spec.paramRef.parameterNotFoundAction: Required value")
	check(t, ValidateParamRef(&admissionregistrationv1.ParamRef{ParameterNotFoundAction: deny}, r), "spec.paramRef: Required value: one of name or selector must be specified")
	check(t, ValidateParamRef(&admissionregistrationv1.ParamRef{Name: "p", Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: deny}, r),
		"spec.paramRef.name: Forbidden: name and selector are mutually exclusive, spec.paramRef.selector: Forbidden: name and selector are mutually exclusive")
	check(t, ValidateParamRef(&admissionregistrationv1.ParamRef{Name: "p", ParameterNotFoundAction: ptr.To[admissionregistrationv1.ParameterNotFoundActionType]("invalid")}, r),
		`spec.paramRef.parameterNotFoundAction: Unsupported value: "invalid": supported values: "Deny", "Allow"`)
}

func TestValidateValidationActions(t *testing.T) {
	p := field.NewPath("spec", "validationActions")
	check(t, ValidateValidationActions([]admissionregistrationv1.ValidationAction{"Deny", "Audit"}, p), "")
	check(t, ValidateValidationActions(nil, p), "spec.validationActions: Required value: at least one validation action is required")
	check(t, ValidateValidationActions([]admissionregistrationv1.ValidationAction{"Deny", "Deny"}, p), `spec.validationActions[1]: Duplicate value: "Deny"`)
	check(t, ValidateValidationActions([]admissionregistrationv1.ValidationAction{"illegal"}, p), `Unsupported value: "illegal": supported values: "Audit", "Deny", "Warn"`)
	check(t, ValidateValidationActions([]admissionregistrationv1.ValidationAction{"Deny", "Warn"}, p), "must not contain both Deny and Warn")
}

func TestValidateMatchResources(t *testing.T) {
	p := field.NewPath("spec", "matchConstraints")
	valid := func() *admissionregistrationv1.MatchResources {
		m := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule(create, "pods")}}}
		SetMatchResourcesDefaults(m)
		return m
	}
	check(t, ValidateMatchResources(valid(), p), "")
	m := valid()
	m.MatchPolicy = ptr.To[admissionregistrationv1.MatchPolicyType]("other")
	check(t, ValidateMatchResources(m, p), `spec.matchConstraints.matchPolicy: Unsupported value: "other": supported values: "Equivalent", "Exact"`)
	m = valid()
	m.NamespaceSelector = nil
	check(t, ValidateMatchResources(m, p), "spec.matchConstraints.namespaceSelector: Required value")
	m = valid()
	m.ResourceRules[0].ResourceNames = []string{"test", "test", "/./."}
	check(t, ValidateMatchResources(m, p), `spec.matchConstraints.resourceRules[0].resourceNames[1]: Duplicate value: "test"`)
	check(t, ValidateMatchResources(m, p), `spec.matchConstraints.resourceRules[0].resourceNames[2]: Invalid value: "/./."`)
	m = valid()
	m.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule(nil, "pods")}}
	check(t, ValidateMatchResources(m, p), "spec.matchConstraints.excludeResourceRules[0].operations: Required value")
	m = valid()
	m.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	check(t, ValidateMutatingOperations(m, p), `spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"`)
}

func TestCompiler(t *testing.T) {
	p := field.NewPath("spec")
	c := NewCompiler(true)
	stored := StoredExpressions{}
	check(t, c.ValidateVariable(&admissionregistrationv1.Variable{Name: "replicas", Expression: "object.spec.replicas"}, false, stored, p.Child("variables").Index(0)), "")
	check(t, c.ValidateVariable(&admissionregistrationv1.Variable{Name: "4ever", Expression: "1"}, false, stored, p.Child("variables").Index(1)),
		`spec.variables[1].name: Invalid value: "4ever": must be a valid CEL identifier`)
	check(t, c.ValidateVariable(&admissionregistrationv1.Variable{Name: "x", Expression: "114 + '514'"}, false, stored, p.Child("variables").Index(1)),
		`spec.variables[1].expression: Invalid value: "114 + '514'": compilation failed: ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(int, string)`)
	check(t, c.ValidateVariable(&admissionregistrationv1.Variable{Name: "x"}, false, stored, p.Child("variables").Index(1)),
		"spec.variables[1].expression: Required value: expression is not specified")

	v := func(expr, msgExpr string) *admissionregistrationv1.Validation {
		return &admissionregistrationv1.Validation{Expression: expr, MessageExpression: msgExpr}
	}
	vp := p.Child("validations").Index(0)
	check(t, c.ValidateValidation(v("variables.replicas < 5", "'too many: ' + string(variables.replicas)"), false, stored, vp), "")
	check(t, c.ValidateValidation(v("variables.nope == 2", ""), false, stored, vp), `spec.validations[0].expression: Invalid value: "variables.nope == 2": compilation failed: ERROR: <input>:1:10: undefined field 'nope'`)
	check(t, c.ValidateValidation(v("object.x in [1, 2, ", ""), false, stored, vp),
		`spec.validations[0].expression: Invalid value: "object.x in [1, 2, ": compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>`)
	check(t, c.ValidateValidation(v("true", "0 == 0"), false, stored, vp), `spec.validations[0].messageExpression: Invalid value: "0 == 0": must evaluate to string`)
	check(t, c.ValidateValidation(v("true", "  "), false, stored, vp), `spec.validations[0].messageExpression: Invalid value: "  ": must be non-empty if specified`)
	check(t, c.ValidateValidation(v("params.x == 1", ""), false, stored, vp), "undeclared reference to 'params'")
	check(t, c.ValidateValidation(v("params.x == 1", ""), true, stored, vp), "")
	check(t, c.ValidateValidation(v("", ""), false, stored, vp), "spec.validations[0].expression: Required value: expression is not specified")
	check(t, c.ValidateValidation(&admissionregistrationv1.Validation{Expression: "true", Message: "a\nb"}, false, stored, vp), "spec.validations[0].message: Invalid value: \"a\\nb\": must not contain line breaks")
	check(t, c.ValidateValidation(&admissionregistrationv1.Validation{Expression: "true", Reason: ptr.To[metav1.StatusReason]("other")}, false, stored, vp),
		`spec.validations[0].reason: Unsupported value: "other": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"`)

	ap := p.Child("auditAnnotations").Index(0)
	check(t, c.ValidateAuditAnnotation("policy", &admissionregistrationv1.AuditAnnotation{Key: "k", ValueExpression: "'v'"}, false, stored, ap), "")
	check(t, c.ValidateAuditAnnotation("policy", &admissionregistrationv1.AuditAnnotation{Key: "k", ValueExpression: "true"}, false, stored, ap),
		`spec.auditAnnotations[0].valueExpression: Invalid value: "true": must evaluate to one of [string null_type]`)
	check(t, c.ValidateAuditAnnotation("config", &admissionregistrationv1.AuditAnnotation{Key: "@", ValueExpression: "'v'"}, false, stored, ap),
		`spec.auditAnnotations[0].key: Invalid value: "config/@": name part must consist of alphanumeric characters`)
	check(t, c.ValidateAuditAnnotation("", &admissionregistrationv1.AuditAnnotation{Key: "k", ValueExpression: "'v'"}, false, stored, ap),
		"requires metadata.name be non-empty")
	check(t, c.ValidateAuditAnnotation("policy", &admissionregistrationv1.AuditAnnotation{Key: "k", ValueExpression: strings.Repeat("a", 5*1024+1)}, false, stored, ap),
		"spec.auditAnnotations[0].valueExpression: Required value: must not exceed 5120 bytes in length")

	mp := p.Child("mutations").Index(0)
	apply := func(expr string) *admissionregistrationv1.Mutation {
		return &admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
	}
	check(t, c.ValidateMutation(apply("Object{metadata: Object.metadata{labels: {'a': 'b'}}}"), false, stored, mp), "")
	check(t, c.ValidateMutation(apply("1 < 2"), false, stored, mp), `spec.mutations[0].applyConfiguration.expression: Invalid value: "1 < 2": must evaluate to Object`)
	check(t, c.ValidateMutation(apply(""), false, stored, mp), "spec.mutations[0].applyConfiguration.expression: Required value")
	check(t, c.ValidateMutation(&admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: 'add', path: '/metadata/labels/a', value: 'b'}]"}}, false, stored, mp), "")
	check(t, c.ValidateMutation(&admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch}, false, stored, mp),
		"spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch")
	m := apply("Object{}")
	m.JSONPatch = &admissionregistrationv1.JSONPatch{Expression: "[]"}
	check(t, c.ValidateMutation(m, false, stored, mp), `spec.mutations[0].jsonPatch: Invalid value: "{jsonPatch}": must not be specified when patchType is ApplyConfiguration`)
	check(t, c.ValidateMutation(&admissionregistrationv1.Mutation{}, false, stored, mp), "spec.mutations[0].patchType: Required value")
	check(t, c.ValidateMutation(&admissionregistrationv1.Mutation{PatchType: "other"}, false, stored, mp),
		`spec.mutations[0].patchType: Unsupported value: "other": supported values: "ApplyConfiguration", "JSONPatch"`)

	// Without composition, variables are refused rather than silently unknown.
	check(t, NewCompiler(false).ValidateVariable(&admissionregistrationv1.Variable{Name: "x", Expression: "1"}, false, stored, p.Child("variables").Index(0)),
		"variable composition is not allowed")
}

func TestTableCells(t *testing.T) {
	for _, tc := range []struct {
		ref  *admissionregistrationv1.ParamRef
		want string
	}{
		{nil, "<unset>"},
		{&admissionregistrationv1.ParamRef{Name: "p", Namespace: "ns"}, "ns/p"},
		{&admissionregistrationv1.ParamRef{Name: "p"}, "*/p"},
		{&admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}, "&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}"},
	} {
		if got := ParamRefCell(tc.ref); got != tc.want {
			t.Errorf("ParamRefCell(%+v) = %q, want %q", tc.ref, got, tc.want)
		}
	}
	if got := ParamKindCell(&admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}); got != "v1/ConfigMap" {
		t.Errorf("ParamKindCell = %q", got)
	}
}

func TestNameAndRuleWarnings(t *testing.T) {
	check(t, ValidateName("x.static.k8s.io"), `metadata.name: Invalid value: "x.static.k8s.io": names ending with ".static.k8s.io" are reserved`)
	check(t, ValidateName("x.k8s.io"), "")
	if w := NameWarnings("x.static.k8s.io", true); len(w) != 1 {
		t.Errorf("update of a reserved name: warnings %v", w)
	}
	hooks := testWebhooks(func(h *admissionregistrationv1.ValidatingWebhook) {
		h.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: create, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"authorization.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"subjectaccessreviews", "subjectaccessreviews"}}}}
	})
	w := RuleWarnings(ValidatingWebhooks(hooks))
	if len(w) != 1 || w[0] != "webhooks[0].rules[0]: subjectaccessreviews.authorization.k8s.io is excluded from admission webhooks; this rule will have no effect" {
		t.Errorf("rule warnings %q", w)
	}
}
