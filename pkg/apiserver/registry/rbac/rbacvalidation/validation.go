// Package rbacvalidation is the validation the four rbac.authorization.k8s.io registries
// share: names, policy rules, role references and subjects, with upstream's field paths and
// messages. It is the validate step of "decode → default → validate → admit → store" for
// roles and bindings; each registry calls it from its strategy.
package rbacvalidation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// ValidateName is the name rule of roles and bindings: anything that can be a path segment
// (not "." or "..", no "/" or "%"), looser than the DNS names of most resources.
func ValidateName(name string, _ bool) []string { return content.IsPathSegmentName(name) }

// ValidateObjectMeta validates the metadata of a role or binding.
func ValidateObjectMeta(meta, old *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	path := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(meta, namespaced, ValidateName, path)
	if old != nil {
		errs = append(errs, apivalidation.ValidateObjectMetaUpdate(meta, old, path)...)
	}
	return append(errs, namespace.ValidateMetadataFinalizers(meta.Finalizers, path.Child("finalizers"))...)
}

// ValidatePolicyRule validates one rule of a role. A namespaced role's rules cannot name
// non-resource URLs, which exist only cluster-wide.
func ValidatePolicyRule(rule *rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// ValidateRules validates every rule of a role.
func ValidateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i := range rules {
		errs = append(errs, ValidatePolicyRule(&rules[i], namespaced, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// ValidateRoleRef validates a binding's reference to its role; kinds are the kinds the
// binding may refer to (a ClusterRoleBinding only to a ClusterRole).
func ValidateRoleRef(ref *rbacv1.RoleRef, kinds ...string) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(path.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	known := false
	for _, k := range kinds {
		known = known || ref.Kind == k
	}
	if !known {
		errs = append(errs, field.NotSupported(path.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		for _, msg := range ValidateName(ref.Name, false) {
			errs = append(errs, field.Invalid(path.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

// ValidateRoleRefUpdate refuses a change of the role a binding refers to: that would
// change what every subject may do without the escalation check of a new binding.
func ValidateRoleRefUpdate(ref, old *rbacv1.RoleRef) field.ErrorList {
	return apivalidation.ValidateImmutableField(*ref, *old, field.NewPath("roleRef"))
}

// ValidateSubjects validates a binding's subjects. In a ClusterRoleBinding a service
// account must name its namespace; in a RoleBinding it defaults to the binding's.
func ValidateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i := range subjects {
		errs = append(errs, validateSubject(&subjects[i], namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s *rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.ValidateServiceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// SetSubjectDefaults gives subjects of kind User and Group the rbac API group when they
// name none, as upstream's defaulting does (a ServiceAccount's group stays empty).
func SetSubjectDefaults(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// SetRoleRefDefaults gives a role reference the rbac API group when it names none.
func SetRoleRefDefaults(ref *rbacv1.RoleRef) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
}
