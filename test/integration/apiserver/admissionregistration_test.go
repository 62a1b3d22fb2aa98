package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// admissionRules match a resource nothing in the shared cluster writes, so that these objects
// cannot refuse another test's requests once the admission plugins read them.
var admissionRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
}}

func namedRules() []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionRules[0]}}
}

// TestAdmissionRegistration: the six kinds of admissionregistration.k8s.io/v1 are served
// cluster-scoped in the "api-extensions" category, created with upstream's defaults, listed,
// updated with a generation bump, and refused with a 422 naming the field when invalid; a
// policy's CEL expressions are compiled on write.
func TestAdmissionRegistration(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)

	resources, err := c.Client.Discovery().ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range resources.APIResources {
		served[r.Name] = true
		if !strings.Contains(r.Name, "/") && (r.Namespaced || !slices.Contains(r.Categories, "api-extensions")) {
			t.Errorf("%s: namespaced %v, categories %v", r.Name, r.Namespaced, r.Categories)
		}
	}
	for _, name := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies",
		"validatingadmissionpolicies/status", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		if !served[name] {
			t.Errorf("%s not served", name)
		}
	}

	t.Run("webhooks", func(t *testing.T) { testWebhookConfigurations(t, ctx, c.Client) })
	t.Run("policies", func(t *testing.T) { testAdmissionPolicies(t, ctx, c.Client) })
}

func testWebhookConfigurations(t *testing.T, ctx context.Context, client kubernetes.Interface) {
	vwcs := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	hook := admissionregistrationv1.ValidatingWebhook{
		Name:                    "deny.widgets.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "widgets"}},
		Rules:                   admissionRules,
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
	vwc, err := vwcs.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "integration-widgets"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{hook},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vwcs.Delete(context.Background(), vwc.Name, metav1.DeleteOptions{}) })
	h := vwc.Webhooks[0]
	if *h.FailurePolicy != admissionregistrationv1.Fail || *h.MatchPolicy != admissionregistrationv1.Equivalent || *h.TimeoutSeconds != 10 ||
		*h.ClientConfig.Service.Port != 443 || *h.Rules[0].Scope != admissionregistrationv1.AllScopes || h.NamespaceSelector == nil || h.ObjectSelector == nil {
		t.Errorf("defaults not applied: %+v", h)
	}
	if vwc.Generation != 1 {
		t.Errorf("generation %d on create", vwc.Generation)
	}
	got, err := vwcs.Get(ctx, vwc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
	updated, err := vwcs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 || *updated.Webhooks[0].TimeoutSeconds != 5 {
		t.Errorf("update: generation %d, timeout %d", updated.Generation, *updated.Webhooks[0].TimeoutSeconds)
	}
	list, err := vwcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Items, func(c admissionregistrationv1.ValidatingWebhookConfiguration) bool { return c.Name == vwc.Name }) {
		t.Errorf("list lacks %s", vwc.Name)
	}

	mwcs := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mwc, err := mwcs.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "integration-widgets"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: hook.Name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://widgets.example.com/mutate")},
			Rules: admissionRules, SideEffects: hook.SideEffects, AdmissionReviewVersions: []string{"v1", "v1beta1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mwcs.Delete(context.Background(), mwc.Name, metav1.DeleteOptions{}) })
	if p := mwc.Webhooks[0].ReinvocationPolicy; p == nil || *p != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("reinvocationPolicy %v, want Never", p)
	}
	mwc.Webhooks[0].ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
	if mwc, err = mwcs.Update(ctx, mwc, metav1.UpdateOptions{}); err != nil || mwc.Generation != 2 {
		t.Errorf("update: %v", err)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingWebhook)
		want   string
	}{
		{"no side effects", func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil },
			"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"},
		{"no review versions", func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = nil },
			"webhooks[0].admissionReviewVersions: Required value"},
		{"url and service", func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("https://example.com") },
			"webhooks[0].clientConfig: Required value: exactly one of url or service is required"},
		{"bad match condition", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.x in [1, 2,"}}
		}, `webhooks[0].matchConditions[0].expression: Invalid value: "object.x in [1, 2,": compilation failed: ERROR: <input>:1:19: Syntax error`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := *hook.DeepCopy()
			tc.mutate(&h)
			_, err := vwcs.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "integration-invalid"},
				Webhooks:   []admissionregistrationv1.ValidatingWebhook{h},
			}, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a 422 with %q", err, tc.want)
			}
		})
	}
	dup := []admissionregistrationv1.ValidatingWebhook{hook, hook}
	if _, err := vwcs.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "integration-dup"}, Webhooks: dup},
		metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `webhooks[1].name: Duplicate value: "deny.widgets.example.com"`) {
		t.Errorf("duplicate webhook names: %v", err)
	}
}

func testAdmissionPolicies(t *testing.T, ctx context.Context, client kubernetes.Interface) {
	ar := client.AdmissionregistrationV1()
	vaps := ar.ValidatingAdmissionPolicies()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "integration-widgets"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: namedRules()},
			Variables:        []admissionregistrationv1.Variable{{Name: "max", Expression: "int(params.data.max)"}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.spec.size <= variables.max", MessageExpression: "'at most ' + string(variables.max)",
			}},
		},
	}
	vap, err := vaps.Create(ctx, policy, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vaps.Delete(context.Background(), vap.Name, metav1.DeleteOptions{}) })
	if *vap.Spec.FailurePolicy != admissionregistrationv1.Fail || *vap.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent ||
		vap.Spec.MatchConstraints.ObjectSelector == nil || *vap.Spec.MatchConstraints.ResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults not applied: %+v", vap.Spec)
	}
	vap.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 1}
	vap.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore) // ignored by the status endpoint
	status, err := vaps.UpdateStatus(ctx, vap, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if status.Status.ObservedGeneration != 1 || *status.Spec.FailurePolicy != admissionregistrationv1.Fail || status.Generation != 1 {
		t.Errorf("status update: %+v", status)
	}
	status.Spec.Validations = append(status.Spec.Validations, admissionregistrationv1.Validation{Expression: "has(object.spec)"})
	status.Status.ObservedGeneration = 5 // ignored by the main endpoint
	updated, err := vaps.Update(ctx, status, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 || updated.Status.ObservedGeneration != 1 {
		t.Errorf("spec update: generation %d, status %+v", updated.Generation, updated.Status)
	}

	bad := policy.DeepCopy()
	bad.Name = "integration-bad-cel"
	bad.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.size <= "}}
	_, err = vaps.Create(ctx, bad, metav1.CreateOptions{})
	if want := `spec.validations[0].expression: Invalid value: "object.spec.size <= ": compilation failed: ERROR: <input>:1:`; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("bad CEL: got %v, want a 422 with %q", err, want)
	}
	bad.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "variables.nope > 1"}}
	if _, err = vaps.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "undefined field 'nope'") {
		t.Errorf("unknown variable: %v", err)
	}

	bindings := ar.ValidatingAdmissionPolicyBindings()
	binding, err := bindings.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "integration-widgets"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        vap.Name,
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "widget-limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)},
			MatchResources:    &admissionregistrationv1.MatchResources{},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), binding.Name, metav1.DeleteOptions{}) })
	if m := binding.Spec.MatchResources; m.MatchPolicy == nil || m.NamespaceSelector == nil {
		t.Errorf("match resources not defaulted: %+v", m)
	}
	binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn}
	if _, err := bindings.Update(ctx, binding, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.validationActions: Invalid value") {
		t.Errorf("Deny and Warn: %v", err)
	}

	maps := ar.MutatingAdmissionPolicies()
	mp, err := maps.Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "integration-widgets"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: namedRules()},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: 'add', path: '/metadata/labels/seen', value: 'yes'}]"}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = maps.Delete(context.Background(), mp.Name, metav1.DeleteOptions{}) })
	if *mp.Spec.FailurePolicy != admissionregistrationv1.Fail || mp.Generation != 1 {
		t.Errorf("create: %+v", mp)
	}
	mp.Spec.ReinvocationPolicy = ""
	if _, err := maps.Update(ctx, mp, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.reinvocationPolicy: Required value") {
		t.Errorf("no reinvocation policy: %v", err)
	}

	mbindings := ar.MutatingAdmissionPolicyBindings()
	mb, err := mbindings.Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "integration-widgets"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: mp.Name},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mbindings.Delete(context.Background(), mb.Name, metav1.DeleteOptions{}) })
	mb.Spec.PolicyName = ""
	if _, err := mbindings.Update(ctx, mb, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.policyName: Required value") {
		t.Errorf("no policy name: %v", err)
	}
	list, err := mbindings.List(ctx, metav1.ListOptions{})
	if err != nil || !slices.ContainsFunc(list.Items, func(b admissionregistrationv1.MutatingAdmissionPolicyBinding) bool { return b.Name == mb.Name }) {
		t.Errorf("list: %v", err)
	}
}
