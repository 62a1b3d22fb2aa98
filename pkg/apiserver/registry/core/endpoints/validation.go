package endpoints

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// strictIPValidation is the StrictIPCIDRValidation gate, beta and on by default in the
// Kubernetes release berth tracks: addresses with leading zeros or IPv4-mapped IPv6 ones are
// refused, unless an update leaves the subsets as they were.
const strictIPValidation = true

var protocols = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)

// ValidateEndpointsCreate validates new Endpoints.
func ValidateEndpointsCreate(ep *corev1.Endpoints) field.ErrorList {
	return ValidateEndpoints(ep, nil)
}

// ValidateEndpointsUpdate validates an update: the metadata rules of updates, then the new
// state. A changed nodeName is allowed: a node's IP or pod CIDR may be reused, and an
// address then belongs to another node.
func ValidateEndpointsUpdate(ep, old *corev1.Endpoints) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&ep.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(ep.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, ValidateEndpoints(ep, old)...)
}

// ValidateEndpoints validates the state of Endpoints; old is nil on create. On an update
// that leaves the subsets as they were, their errors are dropped: older releases accepted
// them, and an object must stay updatable (its labels, say) after an upgrade.
func ValidateEndpoints(ep, old *corev1.Endpoints) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&ep.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(ep.Finalizers, metaPath.Child("finalizers"))...)
	subsetErrs := validateSubsets(ep.Subsets, field.NewPath("subsets"))
	// Compared only after an error: Endpoints can be large.
	if len(subsetErrs) > 0 && old != nil && apiequality.Semantic.DeepEqual(old.Subsets, ep.Subsets) {
		subsetErrs = nil
	}
	return append(errs, subsetErrs...)
}

func validateSubsets(subsets []corev1.EndpointSubset, fldPath *field.Path) field.ErrorList {
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
		// Names tell several ports apart (a Service's targetPort names one); one may go without.
		for j := range ss.Ports {
			errs = append(errs, validatePort(&ss.Ports[j], len(ss.Ports) > 1, idx.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	ipPath := fldPath.Child("ip")
	errs := validation.IsValidIPForLegacyField(ipPath, a.IP, strictIPValidation, nil)
	if a.Hostname != "" {
		errs = append(errs, dns1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, ValidateEndpointIP(a.IP, ipPath)...)
}

// ValidateEndpointIP refuses the addresses an endpoint may not have, in Kubernetes' words:
// unspecified, loopback and link-local ones. Clients (the API server's own proxy among them)
// connect to endpoints, and these would point them at themselves or their host. Parsing is
// sloppy on purpose: leading zeros are the legacy check's business, which reports them
// already. EndpointSlices share it.
func ValidateEndpointIP(s string, fldPath *field.Path) field.ErrorList {
	ip := netutils.ParseIPSloppy(s)
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
		errs = append(errs, dns1123Label(p.Name, fldPath.Child("name"))...)
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

func dns1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}
