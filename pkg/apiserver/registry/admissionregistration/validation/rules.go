// Package validation holds what the registries of admissionregistration.k8s.io/v1 share: the
// defaults and validation (upstream's pkg/apis/admissionregistration/v1/defaults.go and
// pkg/apis/admissionregistration/validation) of the structs more than one kind embeds: webhooks,
// their client config and rules, match resources, param kinds and refs, and the compilation of
// their CEL expressions with k8s.io/apiserver's admission CEL libraries.
//
// Each kind's package (validatingwebhookconfiguration, validatingadmissionpolicy, ...) composes
// these pieces into its own Validate and SetDefaults, in the API server's flow
// (decode → default → validate → admit → store).
package validation

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// The value sets upstream checks against; NotSupported lists them sorted, as upstream's
// sets.String does.
var (
	failurePolicies       = []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}
	matchPolicies         = []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}
	reinvocationPolicies  = []string{string(admissionregistrationv1.IfNeededReinvocationPolicy), string(admissionregistrationv1.NeverReinvocationPolicy)}
	scopes                = []string{"*", string(admissionregistrationv1.ClusterScope), string(admissionregistrationv1.NamespacedScope)}
	operations            = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	validationActions     = []string{string(admissionregistrationv1.Audit), string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn)}
	validationReasons     = []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge)}
	patchTypes            = []string{string(admissionregistrationv1.PatchTypeApplyConfiguration), string(admissionregistrationv1.PatchTypeJSONPatch)}
	mutatingOperations    = []string{"*", "CONNECT", "CREATE", "UPDATE"} // a mutation cannot change a DELETE
	parameterNotFoundActs = []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}
)

// ValidateFailurePolicy checks an optional failure policy.
func ValidateFailurePolicy(p *admissionregistrationv1.FailurePolicyType, fldPath *field.Path) field.ErrorList {
	if p != nil && !slices.Contains(failurePolicies, string(*p)) {
		return field.ErrorList{field.NotSupported(fldPath, *p, failurePolicies)}
	}
	return nil
}

// ValidateRequiredFailurePolicy checks a policy's failure policy, which defaulting always sets.
func ValidateRequiredFailurePolicy(p *admissionregistrationv1.FailurePolicyType, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return ValidateFailurePolicy(p, fldPath)
}

// ValidateReinvocationPolicy checks an optional reinvocation policy.
func ValidateReinvocationPolicy(p *admissionregistrationv1.ReinvocationPolicyType, fldPath *field.Path) field.ErrorList {
	if p != nil && !slices.Contains(reinvocationPolicies, string(*p)) {
		return field.ErrorList{field.NotSupported(fldPath, *p, reinvocationPolicies)}
	}
	return nil
}

// ValidateRequiredReinvocationPolicy checks a MutatingAdmissionPolicy's reinvocation policy,
// which has no default.
func ValidateRequiredReinvocationPolicy(p admissionregistrationv1.ReinvocationPolicyType, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return ValidateReinvocationPolicy(&p, fldPath)
}

func validateMatchPolicy(p *admissionregistrationv1.MatchPolicyType, fldPath *field.Path) field.ErrorList {
	if p != nil && !slices.Contains(matchPolicies, string(*p)) {
		return field.ErrorList{field.NotSupported(fldPath, *p, matchPolicies)}
	}
	return nil
}

// ValidateRuleWithOperations checks one webhook or policy rule: its operations, groups,
// versions, resources (with subresources) and scope.
func ValidateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	opsPath := fldPath.Child("operations")
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(opsPath, ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(opsPath, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(operations, string(op)) {
			errs = append(errs, field.NotSupported(opsPath.Index(i), op, operations))
		}
	}
	return append(errs, validateRule(&r.Rule, fldPath)...)
}

func validateRule(r *admissionregistrationv1.Rule, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(fldPath.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	// The core group's name is "": an empty group is valid, an empty version is not.
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(fldPath.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(fldPath.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, fldPath.Child("resources"))...)
	if r.Scope != nil && !slices.Contains(scopes, string(*r.Scope)) {
		errs = append(errs, field.NotSupported(fldPath.Child("scope"), *r.Scope, scopes))
	}
	return errs
}

// validateResources checks "resource", "resource/subresource" and their wildcards: a wildcard
// must not overlap a name it already covers.
func validateResources(resources []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(fldPath, ""))
	}
	allSubresourcesOf := sets.New[string]() // x/*
	allResourcesWith := sets.New[string]()  // */x
	doubleWildcard, singleWildcard, plainResource := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(fldPath.Index(i), ""))
			continue
		}
		doubleWildcard = doubleWildcard || rs == "*/*"
		singleWildcard = singleWildcard || rs == "*"
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			// Upstream keeps only the last plain entry's verdict; so does berth.
			plainResource = rs != "*"
			continue
		}
		if allSubresourcesOf.Has(res) {
			errs = append(errs, field.Invalid(fldPath.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if allResourcesWith.Has(sub) {
			errs = append(errs, field.Invalid(fldPath.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			allSubresourcesOf.Insert(res)
		}
		if res == "*" {
			allResourcesWith.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWildcard {
		errs = append(errs, field.Invalid(fldPath, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWildcard && plainResource {
		errs = append(errs, field.Invalid(fldPath, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// ValidateMatchResources checks a policy's matchConstraints or a binding's matchResources.
// Their selectors are checked strictly: the type came after upstream's issue 99139.
func ValidateMatchResources(m *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(fldPath.Child("matchPolicy"), ""))
	} else {
		errs = append(errs, validateMatchPolicy(m.MatchPolicy, fldPath.Child("matchPolicy"))...)
	}
	for _, s := range []struct {
		name     string
		selector *metav1.LabelSelector
	}{{"namespaceSelector", m.NamespaceSelector}, {"objectSelector", m.ObjectSelector}} {
		if s.selector == nil {
			errs = append(errs, field.Required(fldPath.Child(s.name), ""))
		} else {
			errs = append(errs, metavalidation.ValidateLabelSelector(s.selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child(s.name))...)
		}
	}
	for i := range m.ResourceRules {
		errs = append(errs, validateNamedRule(&m.ResourceRules[i], fldPath.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&m.ExcludeResourceRules[i], fldPath.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(r *admissionregistrationv1.NamedRuleWithOperations, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, name := range r.ResourceNames {
		for _, msg := range content.IsPathSegmentName(name) {
			errs = append(errs, field.Invalid(fldPath.Child("resourceNames").Index(i), name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(fldPath.Child("resourceNames").Index(i), name))
		}
		seen.Insert(name)
	}
	return append(errs, ValidateRuleWithOperations(&r.RuleWithOperations, fldPath)...)
}

// ValidateMutatingOperations refuses DELETE in the rules of a mutating policy or binding. As
// upstream, the error names the operations list, not the rule.
func ValidateMutatingOperations(m *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	for _, r := range m.ResourceRules {
		for _, op := range r.Operations {
			if !slices.Contains(mutatingOperations, string(op)) {
				errs = append(errs, field.NotSupported(fldPath.Child("resourceRules", "operations"), op, mutatingOperations))
			}
		}
	}
	return errs
}

// ValidateParamKind checks a policy's paramKind: an apiVersion whose group and version are
// what an APIService may name, and a kind.
func ValidateParamKind(pk *admissionregistrationv1.ParamKind, fldPath *field.Path) field.ErrorList {
	if pk == nil {
		return nil
	}
	var errs field.ErrorList
	avPath := fldPath.Child("apiVersion")
	if pk.APIVersion == "" {
		errs = append(errs, field.Required(avPath, ""))
	} else if group, version, err := parseGroupVersion(pk.APIVersion); err != nil {
		errs = append(errs, field.Invalid(avPath, pk.APIVersion, err.Error()))
	} else {
		if group != "" {
			if msgs := utilvalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(avPath, group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(avPath, pk.APIVersion, "version must be specified"))
		} else if msgs := utilvalidation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(avPath, version, strings.Join(msgs, ",")))
		}
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(fldPath.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// parseGroupVersion splits "group/version" or "version" as upstream's validation does: unlike
// schema.ParseGroupVersion, "/" alone is the empty group and version.
func parseGroupVersion(gv string) (group, version string, err error) {
	if gv == "" || gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		group, version, _ = strings.Cut(gv, "/")
		return group, version, nil
	default:
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

// ValidatePolicyName checks a binding's policyName.
func ValidatePolicyName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// ValidateParamRef checks a binding's paramRef: a name or a selector, never both, and what to
// do when no parameter is found.
func ValidateParamRef(pr *admissionregistrationv1.ParamRef, fldPath *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	var errs field.ErrorList
	if pr.Name != "" {
		for _, msg := range content.IsPathSegmentName(pr.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("name"), `name and selector are mutually exclusive`))
		}
	}
	if pr.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabelSelector(pr.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		if pr.Name != "" {
			errs = append(errs, field.Forbidden(fldPath.Child("selector"), `name and selector are mutually exclusive`))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		errs = append(errs, field.Required(fldPath, `one of name or selector must be specified`))
	}
	actPath := fldPath.Child("parameterNotFoundAction")
	switch {
	case pr.ParameterNotFoundAction == nil || *pr.ParameterNotFoundAction == "":
		errs = append(errs, field.Required(actPath, ""))
	case !slices.Contains(parameterNotFoundActs, string(*pr.ParameterNotFoundAction)):
		errs = append(errs, field.NotSupported(actPath, pr.ParameterNotFoundAction, parameterNotFoundActs))
	}
	return errs
}

// ValidateValidationActions checks a ValidatingAdmissionPolicyBinding's actions: at least one,
// each known and once, and not both Deny and Warn.
func ValidateValidationActions(actions []admissionregistrationv1.ValidationAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range actions {
		if !slices.Contains(validationActions, string(a)) {
			errs = append(errs, field.NotSupported(fldPath.Index(i), a, validationActions))
		}
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(fldPath, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if seen.Len() == 0 {
		errs = append(errs, field.Required(fldPath, "at least one validation action is required"))
	}
	return errs
}

// StaticConfigSuffix ends the names that only manifest files read at start-up may use.
const StaticConfigSuffix = ".static.k8s.io"

// staticSuffixMessage is upstream's reason for refusing (or warning about) such a name.
var staticSuffixMessage = fmt.Sprintf("names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", StaticConfigSuffix)

// ValidateName refuses, when the ManifestBasedAdmissionControlConfig feature is on (the default
// from 1.37), a name reserved for configurations from manifests.
func ValidateName(name string) field.ErrorList {
	if utilfeature.DefaultFeatureGate.Enabled(features.ManifestBasedAdmissionControlConfig) && strings.HasSuffix(name, StaticConfigSuffix) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, staticSuffixMessage)}
	}
	return nil
}

// NameWarnings warns about a reserved name that an API write may still use (on creates with the
// feature off; on every update, since such an object predates the feature).
func NameWarnings(name string, update bool) []string {
	if !strings.HasSuffix(name, StaticConfigSuffix) {
		return nil
	}
	if !update && utilfeature.DefaultFeatureGate.Enabled(features.ManifestBasedAdmissionControlConfig) {
		return nil
	}
	return []string{"metadata.name: " + staticSuffixMessage}
}

// excludedFromWebhooks are the resources admission webhooks never see (intercepting these
// reviews could lock the cluster), as upstream's kubeapiserver/admission/exclusion.
var excludedFromWebhooks = sets.New(
	schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
)

// RuleWarnings warns about webhook rules that name an excluded resource explicitly (with no
// wildcard in groups or resources), when the ExcludeAdmissionWebhookVirtualResources feature
// is on: such a rule has no effect.
func RuleWarnings(hooks []Webhook) []string {
	if !utilfeature.DefaultFeatureGate.Enabled(features.ExcludeAdmissionWebhookVirtualResources) {
		return nil
	}
	var warnings []string
	for i, h := range hooks {
		rulesPath := field.NewPath("webhooks").Index(i).Child("rules")
		for j, r := range h.Rules {
			if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") {
				continue
			}
			seen := sets.New[schema.GroupResource]()
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					gr := schema.GroupResource{Group: g, Resource: res}
					if excludedFromWebhooks.Has(gr) && !seen.Has(gr) {
						seen.Insert(gr)
						warnings = append(warnings, fmt.Sprintf("%s: %s is excluded from admission webhooks; this rule will have no effect", rulesPath.Index(j), gr))
					}
				}
			}
		}
	}
	return warnings
}
