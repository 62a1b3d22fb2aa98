package ipaddress

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// ValidateIPAddressName is the name rule of IP addresses: the name is an IPv4 or IPv6
// address in canonical form ("10.0.0.1", "2001:db8::1", never "2001:db8:0::1" or
// "010.0.0.1"), so that one address has exactly one possible name. prefix is ignored:
// names are never generated.
func ValidateIPAddressName(name string, prefix bool) []string {
	var msgs []string
	for _, err := range validation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, err.Detail)
	}
	return msgs
}

// ValidateIPAddress validates an IP address on create. An update runs it as well as
// ValidateIPAddressUpdate.
func ValidateIPAddress(ip *networkingv1.IPAddress) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&ip.ObjectMeta, false, ValidateIPAddressName, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(ip.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, validateParentRef(ip.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}

// validateParentRef checks the reference to the address's holder. Each part must be
// usable as a segment of a REST path; group may be empty, since the core group of
// Services is.
func validateParentRef(ref *networkingv1.ParentReference, fldPath *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(fldPath.Child("group"), ref.Group, msg))
		}
	}
	errs = append(errs, validatePathSegment(ref.Resource, true, fldPath.Child("resource"))...)
	errs = append(errs, validatePathSegment(ref.Name, true, fldPath.Child("name"))...)
	return append(errs, validatePathSegment(ref.Namespace, false, fldPath.Child("namespace"))...)
}

func validatePathSegment(value string, required bool, fldPath *field.Path) field.ErrorList {
	if value == "" {
		if required {
			return field.ErrorList{field.Required(fldPath, "")}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// ValidateIPAddressUpdate validates what an update may change: metadata, under its usual
// rules. The parentRef never changes; an address moves to another holder by being
// deleted and created again.
func ValidateIPAddressUpdate(newIP, oldIP *networkingv1.IPAddress) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newIP.ObjectMeta, &oldIP.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newIP.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, apivalidation.ValidateImmutableField(newIP.Spec.ParentRef, oldIP.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}
