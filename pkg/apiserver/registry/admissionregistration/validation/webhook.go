package validation

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/ptr"
)

// Webhook points into the fields a ValidatingWebhook and a MutatingWebhook share, so that one
// copy of their defaults and validation serves both kinds. Defaulting writes through the
// pointers; validation only reads.
type Webhook struct {
	Name                    string
	ClientConfig            *admissionregistrationv1.WebhookClientConfig
	Rules                   []admissionregistrationv1.RuleWithOperations
	FailurePolicy           **admissionregistrationv1.FailurePolicyType
	MatchPolicy             **admissionregistrationv1.MatchPolicyType
	NamespaceSelector       **metav1.LabelSelector
	ObjectSelector          **metav1.LabelSelector
	SideEffects             *admissionregistrationv1.SideEffectClass
	TimeoutSeconds          **int32
	AdmissionReviewVersions []string
	MatchConditions         []admissionregistrationv1.MatchCondition
}

// ValidatingWebhooks returns the views of a ValidatingWebhookConfiguration's webhooks.
func ValidatingWebhooks(hooks []admissionregistrationv1.ValidatingWebhook) []Webhook {
	out := make([]Webhook, len(hooks))
	for i := range hooks {
		h := &hooks[i]
		out[i] = Webhook{h.Name, &h.ClientConfig, h.Rules, &h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector,
			&h.ObjectSelector, h.SideEffects, &h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions}
	}
	return out
}

// MutatingWebhooks returns the views of a MutatingWebhookConfiguration's webhooks.
func MutatingWebhooks(hooks []admissionregistrationv1.MutatingWebhook) []Webhook {
	out := make([]Webhook, len(hooks))
	for i := range hooks {
		h := &hooks[i]
		out[i] = Webhook{h.Name, &h.ClientConfig, h.Rules, &h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector,
			&h.ObjectSelector, h.SideEffects, &h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions}
	}
	return out
}

// SetWebhookDefaults defaults a webhook as upstream's v1 defaults: failurePolicy Fail,
// matchPolicy Equivalent, selectors that match everything, a 10 s timeout, rules of any scope
// and a service on port 443.
func SetWebhookDefaults(w Webhook) {
	defaultTo(w.FailurePolicy, admissionregistrationv1.Fail)
	defaultTo(w.MatchPolicy, admissionregistrationv1.Equivalent)
	defaultTo(w.NamespaceSelector, metav1.LabelSelector{})
	defaultTo(w.ObjectSelector, metav1.LabelSelector{})
	defaultTo(w.TimeoutSeconds, 10)
	if s := w.ClientConfig.Service; s != nil {
		defaultTo(&s.Port, 443)
	}
	for i := range w.Rules {
		defaultTo(&w.Rules[i].Scope, admissionregistrationv1.AllScopes)
	}
}

// SetMatchResourcesDefaults defaults a policy's matchConstraints or a binding's matchResources.
func SetMatchResourcesDefaults(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	defaultTo(&m.MatchPolicy, admissionregistrationv1.Equivalent)
	defaultTo(&m.NamespaceSelector, metav1.LabelSelector{})
	defaultTo(&m.ObjectSelector, metav1.LabelSelector{})
	for i := range m.ResourceRules {
		defaultTo(&m.ResourceRules[i].Scope, admissionregistrationv1.AllScopes)
	}
	for i := range m.ExcludeResourceRules {
		defaultTo(&m.ExcludeResourceRules[i].Scope, admissionregistrationv1.AllScopes)
	}
}

func defaultTo[T any](p **T, v T) {
	if *p == nil {
		*p = ptr.To(v)
	}
}

// AcceptedAdmissionReviewVersions are the AdmissionReview versions berth's webhook client sends.
var AcceptedAdmissionReviewVersions = []string{"v1", "v1beta1"}

var (
	sideEffectClasses   = []string{"None", "NoneOnDryRun", "Some", "Unknown"}
	noSideEffectClasses = []string{"None", "NoneOnDryRun"}
)

// WebhookOptions are the checks that depend on whether the configuration is new: an update
// keeps accepting what the stored object already had (upstream's ratcheting).
type WebhookOptions struct {
	IgnoreMatchConditions          bool
	RequireNoSideEffects           bool
	RequireRecognizedReviewVersion bool
	RequireUniqueNames             bool
	AllowInvalidLabelValues        bool
	Stored                         StoredExpressions
}

// NewWebhookOptions are the checks of a create: all of them.
func NewWebhookOptions() WebhookOptions {
	return WebhookOptions{RequireNoSideEffects: true, RequireRecognizedReviewVersion: true, RequireUniqueNames: true}
}

// UpdateWebhookOptions are the checks of an update from old: those old already passes, and
// match conditions only when they changed.
func UpdateWebhookOptions(hooks, old []Webhook) WebhookOptions {
	o := WebhookOptions{
		IgnoreMatchConditions:          sameMatchConditions(hooks, old),
		RequireNoSideEffects:           true,
		RequireRecognizedReviewVersion: true,
		RequireUniqueNames:             true,
		Stored:                         NewStoredExpressions(),
	}
	names := sets.New[string]()
	for _, h := range old {
		o.RequireNoSideEffects = o.RequireNoSideEffects && h.SideEffects != nil && slices.Contains(noSideEffectClasses, string(*h.SideEffects))
		if len(h.AdmissionReviewVersions) > 0 && !slices.ContainsFunc(h.AdmissionReviewVersions, isAccepted) {
			o.RequireRecognizedReviewVersion = false
		}
		if names.Has(h.Name) {
			o.RequireUniqueNames = false
		}
		names.Insert(h.Name)
		for _, s := range []*metav1.LabelSelector{*h.NamespaceSelector, *h.ObjectSelector} {
			if s != nil && len(metavalidation.ValidateLabelSelector(s, metavalidation.LabelSelectorValidationOptions{}, nil)) > 0 {
				o.AllowInvalidLabelValues = true
			}
		}
		for _, mc := range h.MatchConditions {
			o.Stored.MatchConditions.Insert(mc.Expression)
		}
	}
	return o
}

func sameMatchConditions(hooks, old []Webhook) bool {
	if len(hooks) != len(old) {
		return false
	}
	for i := range old {
		if !reflect.DeepEqual(hooks[i].MatchConditions, old[i].MatchConditions) {
			return false
		}
	}
	return true
}

func isAccepted(v string) bool { return slices.Contains(AcceptedAdmissionReviewVersions, v) }

// ValidateWebhooks checks the webhooks of a configuration, at webhooks[i]: each one, its
// admission review versions, and that names are unique.
func ValidateWebhooks(hooks []Webhook, opts WebhookOptions) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, h := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(h, opts, p)...)
		errs = append(errs, validateReviewVersions(h.AdmissionReviewVersions, opts.RequireRecognizedReviewVersion, p.Child("admissionReviewVersions"))...)
		if opts.RequireUniqueNames && h.Name != "" {
			if names.Has(h.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), h.Name))
			}
			names.Insert(h.Name)
		}
	}
	return errs
}

func validateWebhook(h Webhook, opts WebhookOptions, fldPath *field.Path) field.ErrorList {
	// A webhook's name must be fully qualified (a domain with at least three segments).
	errs := utilvalidation.IsFullyQualifiedName(fldPath.Child("name"), h.Name)
	for i := range h.Rules {
		errs = append(errs, ValidateRuleWithOperations(&h.Rules[i], fldPath.Child("rules").Index(i))...)
	}
	errs = append(errs, ValidateFailurePolicy(*h.FailurePolicy, fldPath.Child("failurePolicy"))...)
	errs = append(errs, validateMatchPolicy(*h.MatchPolicy, fldPath.Child("matchPolicy"))...)
	allowed := sideEffectClasses
	if opts.RequireNoSideEffects {
		allowed = noSideEffectClasses
	}
	if h.SideEffects == nil {
		errs = append(errs, field.Required(fldPath.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(allowed, ", "))))
	} else if !slices.Contains(allowed, string(*h.SideEffects)) {
		errs = append(errs, field.NotSupported(fldPath.Child("sideEffects"), *h.SideEffects, allowed))
	}
	if t := *h.TimeoutSeconds; t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, field.Invalid(fldPath.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	selectorOpts := metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.AllowInvalidLabelValues}
	if s := *h.NamespaceSelector; s != nil {
		errs = append(errs, metavalidation.ValidateLabelSelector(s, selectorOpts, fldPath.Child("namespaceSelector"))...)
	}
	if s := *h.ObjectSelector; s != nil {
		errs = append(errs, metavalidation.ValidateLabelSelector(s, selectorOpts, fldPath.Child("objectSelector"))...)
	}
	errs = append(errs, validateClientConfig(h.ClientConfig, fldPath.Child("clientConfig"))...)
	if !opts.IgnoreMatchConditions {
		errs = append(errs, ValidateMatchConditions(h.MatchConditions, false, opts.Stored, fldPath.Child("matchConditions"))...)
	}
	return errs
}

// validateClientConfig checks that exactly one of url (https, a host, no user, query or
// fragment) and service is set.
func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, fldPath *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(fldPath, "exactly one of url or service is required")}
	case cc.URL != nil:
		return webhook.ValidateWebhookURL(fldPath.Child("url"), *cc.URL, true)
	default:
		s := cc.Service
		port := ptr.Deref(s.Port, 443)
		// Upstream passes the service's name where the library expects its namespace and the
		// other way round, so a missing name is reported as service.namespace; berth keeps
		// the same messages.
		return webhook.ValidateWebhookService(fldPath.Child("service"), s.Name, s.Namespace, s.Path, port)
	}
}

func validateReviewVersions(versions []string, requireRecognized bool, fldPath *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must specify one of %v", strings.Join(AcceptedAdmissionReviewVersions, ", ")))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(fldPath.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(fldPath.Index(i), v, msg))
		}
	}
	if requireRecognized && !slices.ContainsFunc(versions, isAccepted) {
		errs = append(errs, field.Invalid(fldPath, versions, fmt.Sprintf("must include at least one of %v", strings.Join(AcceptedAdmissionReviewVersions, ", "))))
	}
	return errs
}
