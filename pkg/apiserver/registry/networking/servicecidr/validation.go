package servicecidr

import (
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// ValidateServiceCIDRName is the name rule of service CIDRs: a DNS subdomain.
var ValidateServiceCIDRName = apivalidation.NameIsDNSSubdomain

// ValidateServiceCIDR validates a service CIDR on create.
func ValidateServiceCIDR(sc *networkingv1.ServiceCIDR) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&sc.ObjectMeta, false, ValidateServiceCIDRName, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(sc.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, validateSpec(&sc.Spec, field.NewPath("spec", "cidrs"))...)
}

// validateSpec checks the prefixes: one or two, each in canonical form with no bits set
// past the prefix length, and two only if they are of different families. fldPath is the
// path of the list.
func validateSpec(spec *networkingv1.ServiceCIDRSpec, fldPath *field.Path) field.ErrorList {
	switch n := len(spec.CIDRs); {
	case n == 0:
		return field.ErrorList{field.Required(fldPath, "at least one CIDR required")}
	case n > 2:
		return field.ErrorList{field.Invalid(fldPath, spec, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, cidr := range spec.CIDRs {
		errs = append(errs, validation.IsValidCIDR(fldPath.Index(i), cidr)...)
	}
	if len(spec.CIDRs) == 2 {
		first, second := netutils.IPFamilyOfCIDRString(spec.CIDRs[0]), netutils.IPFamilyOfCIDRString(spec.CIDRs[1])
		if first == second && first != netutils.IPFamilyUnknown {
			errs = append(errs, field.Invalid(fldPath, spec.CIDRs,
				"may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

// ValidateServiceCIDRUpdate validates an update of the main resource. The prefixes are
// immutable, but for one change: a single-family range may gain a prefix of the other
// family, becoming dual-stack (https://issues.k8s.io/131261). Nothing else of the spec is
// checked again.
func ValidateServiceCIDRUpdate(newSC, oldSC *networkingv1.ServiceCIDR) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newSC.ObjectMeta, &oldSC.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newSC.Finalizers, metaPath.Child("finalizers"))...)

	cidrsPath := field.NewPath("spec", "cidrs")
	oldCIDRs, newCIDRs := oldSC.Spec.CIDRs, newSC.Spec.CIDRs
	switch {
	case len(oldCIDRs) == len(newCIDRs):
		for i := range oldCIDRs {
			if oldCIDRs[i] != newCIDRs[i] {
				errs = append(errs, field.Invalid(cidrsPath.Index(i), newCIDRs[i], apivalidation.FieldImmutableErrorMsg))
			}
		}
	case len(oldCIDRs) == 1 && len(newCIDRs) == 2:
		if newCIDRs[0] != oldCIDRs[0] {
			errs = append(errs, field.Invalid(cidrsPath.Index(0), newCIDRs[0], apivalidation.FieldImmutableErrorMsg))
		}
		errs = append(errs, validateSpec(&newSC.Spec, cidrsPath)...)
	default:
		errs = append(errs, field.Invalid(cidrsPath, newCIDRs, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// ValidateServiceCIDRStatusUpdate validates an update of servicecidrs/status: metadata
// rules only, since the conditions are the controller's to write as it sees fit.
func ValidateServiceCIDRStatusUpdate(newSC, oldSC *networkingv1.ServiceCIDR) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newSC.ObjectMeta, &oldSC.ObjectMeta, metaPath)
	return append(errs, namespace.ValidateMetadataFinalizers(newSC.Finalizers, metaPath.Child("finalizers"))...)
}
