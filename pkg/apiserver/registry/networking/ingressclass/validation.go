package ingressclass

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

const maxControllerLen = 250

var scopes = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}

// ValidateIngressClass validates a new class, and the new state of an updated one.
func ValidateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&ic.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(ic.Finalizers, meta.Child("finalizers"))...)
	spec := field.NewPath("spec")
	if len(ic.Spec.Controller) > maxControllerLen {
		errs = append(errs, field.TooLong(spec.Child("controller"), "", maxControllerLen))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(spec.Child("controller"), ic.Spec.Controller)...)
	return append(errs, validateParameters(ic.Spec.Parameters, spec.Child("parameters"))...)
}

// ValidateIngressClassUpdate validates an update: the controller is immutable.
func ValidateIngressClassUpdate(ic, old *networkingv1.IngressClass) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&ic.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, apivalidation.ValidateImmutableField(ic.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))...)
	return append(errs, ValidateIngressClass(ic)...)
}

// validateParameters: a reference with a kind and a name that can be path segments, and a
// scope; a namespace exactly when the scope is Namespace.
func validateParameters(p *networkingv1.IngressClassParametersReference, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if p.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*p.APIGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("apiGroup"), *p.APIGroup, msg))
		}
	}
	for _, f := range []struct{ name, value string }{{"kind", p.Kind}, {"name", p.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(fldPath.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	if p.Scope == nil {
		return append(errs, field.Required(fldPath.Child("scope"), ""))
	}
	switch *p.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if p.Namespace == nil {
			errs = append(errs, field.Required(fldPath.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apivalidation.ValidateNamespaceName(*p.Namespace, false) {
				errs = append(errs, field.Invalid(fldPath.Child("namespace"), *p.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if p.Namespace != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("scope"), *p.Scope, scopes))
	}
	return errs
}
