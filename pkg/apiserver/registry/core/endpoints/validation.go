package endpoints

import (
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

var protocols = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)

// ValidateEndpoints validates Endpoints on create (old nil) and their new state on update.
// Subsets an update did not change are not checked again: older versions took them.
func ValidateEndpoints(ep, old *corev1.Endpoints) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&ep.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(ep.Finalizers, metaPath.Child("finalizers"))...)
	subsetErrs := ValidateSubsets(ep.Subsets, field.NewPath("subsets"))
	if len(subsetErrs) > 0 && old != nil && apiequality.Semantic.DeepEqual(old.Subsets, ep.Subsets) {
		subsetErrs = nil
	}
	return append(errs, subsetErrs...)
}

// ValidateEndpointsUpdate validates an update: metadata rules, then the new state. A changed
// nodeName is allowed (a node's IP or pod CIDR may be reused).
func ValidateEndpointsUpdate(ep, old *corev1.Endpoints) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&ep.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateEndpoints(ep, old)...)
}

// ValidateSubsets validates the subsets at fldPath.
func ValidateSubsets(subsets []corev1.EndpointSubset, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range subsets {
		ss := &subsets[i]
		idx := fldPath.Index(i)
		// A headless Service's subsets may have no ports, never no addresses.
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(idx, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateAddress(&ss.Addresses[j], idx.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateAddress(&ss.NotReadyAddresses[j], idx.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validatePort(&ss.Ports[j], len(ss.Ports) > 1, idx.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	errs := validation.IsValidIPForLegacyField(fldPath.Child("ip"), a.IP, true, nil)
	if a.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(a.Hostname) {
			errs = append(errs, field.Invalid(fldPath.Child("hostname"), a.Hostname, msg))
		}
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, ValidateEndpointIP(a.IP, fldPath.Child("ip"))...)
}

// ValidateEndpointIP refuses the addresses an endpoint may not have: unspecified, loopback,
// link-local (the API server proxies to endpoints; these would point it at itself or its
// host), in Kubernetes' words. EndpointSlices share it.
func ValidateEndpointIP(s string, fldPath *field.Path) field.ErrorList {
	ip := net.ParseIP(s)
	if ip == nil {
		return field.ErrorList{field.Invalid(fldPath, s, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, s, fmt.Sprintf("may not be unspecified (%v)", s)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, s, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, s, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, s, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validatePort(p *corev1.EndpointPort, requireName bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case requireName && p.Name == "":
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	case p.Name != "":
		for _, msg := range validation.IsDNS1123Label(p.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), p.Name, msg))
		}
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), p.Port, msg))
	}
	switch {
	case p.Protocol == "":
		errs = append(errs, field.Required(fldPath.Child("protocol"), ""))
	case !protocols.Has(p.Protocol):
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), p.Protocol, sets.List(protocols)))
	}
	if p.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
			errs = append(errs, field.Invalid(fldPath.Child("appProtocol"), *p.AppProtocol, msg))
		}
	}
	return errs
}
