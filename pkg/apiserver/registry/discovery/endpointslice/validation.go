package endpointslice

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/endpoints"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// Kubernetes' limits on a slice.
const (
	maxTopologyLabels = 16
	maxAddresses      = 100
	maxPorts          = 20000
	maxEndpoints      = 1000
	maxZoneHints      = 8
	maxNodeHints      = 8
)

// strictIPValidation is the StrictIPCIDRValidation gate, beta and on by default in the
// Kubernetes release berth tracks.
const strictIPValidation = true

var (
	addressTypes = sets.New(discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN)
	protocols    = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
)

// ValidateEndpointSliceCreate validates a new slice.
//
// This and ValidateEndpointSliceUpdate are upstream's handwritten validation. The errors a
// client gets are those after the strategy's ValidateDeclaratively, which replaces some of
// them by the declared rules' (declarative.go).
func ValidateEndpointSliceCreate(s *discoveryv1.EndpointSlice) field.ErrorList {
	return ValidateEndpointSlice(s, nil)
}

// ValidateEndpointSliceUpdate validates an update: the new state, and the address type kept.
// The generic store checks the metadata rules of updates itself, and upstream adds none.
func ValidateEndpointSliceUpdate(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := ValidateEndpointSlice(s, old)
	immutable := apivalidation.ValidateImmutableField(s.AddressType, old.AddressType, field.NewPath("addressType"))
	return append(errs, immutable.WithOrigin("immutable").MarkCoveredByDeclarative()...)
}

// ValidateEndpointSlice validates the state of a slice; old is nil on create. On an update
// that leaves the endpoints as they were, their errors are dropped: older releases accepted
// them, and a slice must stay updatable after an upgrade.
//
// Errors that a declared rule of the v1 types covers are marked so (with the origin the
// declared rule's error has), for the merge in ValidateDeclaratively.
func ValidateEndpointSlice(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(s.Finalizers, metaPath.Child("finalizers"))...)
	errs = append(errs, validateAddressType(s.AddressType)...)
	errs = append(errs, validatePorts(s.Ports, field.NewPath("ports"))...)
	epErrs := validateEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))
	// Compared only after an error: a slice holds up to a thousand endpoints.
	if len(epErrs) > 0 && old != nil && apiequality.Semantic.DeepEqual(old.Endpoints, s.Endpoints) {
		epErrs = nil
	}
	return append(errs, epErrs...)
}

func validateAddressType(t discoveryv1.AddressType) field.ErrorList {
	p := field.NewPath("addressType")
	switch {
	case t == "":
		return field.ErrorList{field.Required(p, "").MarkCoveredByDeclarative()}
	case !addressTypes.Has(t):
		return field.ErrorList{field.NotSupported(p, t, sets.List(addressTypes)).MarkCoveredByDeclarative()}
	}
	return nil
}

func validateEndpoints(eps []discoveryv1.Endpoint, t discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	if len(eps) > maxEndpoints {
		return field.ErrorList{field.TooMany(fldPath, len(eps), maxEndpoints)}
	}
	var errs field.ErrorList
	for i := range eps {
		ep := &eps[i]
		idx := fldPath.Index(i)
		addrPath := idx.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(addrPath, "must contain at least 1 address").MarkCoveredByDeclarative())
		case len(ep.Addresses) > maxAddresses:
			errs = append(errs, field.TooMany(addrPath, len(ep.Addresses), maxAddresses).WithOrigin("maxItems").MarkCoveredByDeclarative())
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateAddress(a, t, addrPath, addrPath.Index(j))...)
		}
		if ep.NodeName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				errs = append(errs, field.Invalid(idx.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		// The strategy drops deprecatedTopology from v1 writes; these checks see it only in
		// endpoints an update left unchanged.
		topo := idx.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			errs = append(errs, field.TooMany(topo, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		errs = append(errs, metavalidation.ValidateLabels(ep.DeprecatedTopology, topo)...)
		if _, found := ep.DeprecatedTopology[corev1.LabelTopologyZone]; found {
			errs = append(errs, field.InternalError(topo.Key(corev1.LabelTopologyZone), fmt.Errorf("reserved key was not removed in conversion")))
		}
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(idx.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.Hints != nil {
			errs = append(errs, validateHints(ep.Hints, idx.Child("hints"))...)
		}
	}
	return errs
}

// validateAddress checks one address of a slice of type t; addresses of the wrong family are
// reported on the list (listPath), the others on the address, as upstream does. Addresses
// of an unknown type are not checked: the type's own error says enough.
func validateAddress(a string, t discoveryv1.AddressType, listPath, path *field.Path) field.ErrorList {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		// IPv4 is a legacy field (leading zeros once passed); IPv6 was strict from the start.
		if errs := validation.IsValidIPForLegacyField(path, a, strictIPValidation, nil); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if !netutils.IsIPv4String(a) {
			errs = append(errs, field.Invalid(listPath, a, "must be an IPv4 address"))
		}
		return append(errs, endpoints.ValidateEndpointIP(a, path)...)
	case discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIP(path, a); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if !netutils.IsIPv6String(a) {
			errs = append(errs, field.Invalid(listPath, a, "must be an IPv6 address"))
		}
		return append(errs, endpoints.ValidateEndpointIP(a, path)...)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(path, a)
	}
	return nil
}

func validatePorts(ports []discoveryv1.EndpointPort, fldPath *field.Path) field.ErrorList {
	if len(ports) > maxPorts {
		return field.ErrorList{field.TooMany(fldPath, len(ports), maxPorts)}
	}
	var errs field.ErrorList
	names := make([]string, 0, len(ports)) // a slice: there are few ports, and no set to allocate
	for i, p := range ports {
		idx := fldPath.Index(i)
		name := "" // defaulting sets it; a direct caller may not have
		if p.Name != nil {
			name = *p.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(idx.Child("name"), name, msg))
			}
		}
		// Consumers key ports by name: one unnamed port at most, and no name twice.
		if slices.Contains(names, name) {
			errs = append(errs, field.Duplicate(idx.Child("name"), name))
		} else {
			names = append(names, name)
		}
		switch {
		case p.Protocol == nil:
			errs = append(errs, field.Required(idx.Child("protocol"), ""))
		case !protocols.Has(*p.Protocol):
			errs = append(errs, field.NotSupported(idx.Child("protocol"), *p.Protocol, sets.List(protocols)))
		}
		if p.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
				errs = append(errs, field.Invalid(idx.Child("appProtocol"), *p.AppProtocol, msg))
			}
		}
	}
	return errs
}

func validateHints(h *discoveryv1.EndpointHints, fldPath *field.Path) field.ErrorList {
	zones := fldPath.Child("forZones")
	if len(h.ForZones) > maxZoneHints {
		return field.ErrorList{field.TooMany(zones, len(h.ForZones), maxZoneHints)}
	}
	var errs field.ErrorList
	seen := make([]string, 0, len(h.ForZones))
	for i, z := range h.ForZones {
		p := zones.Index(i).Child("name")
		if slices.Contains(seen, z.Name) {
			errs = append(errs, field.Duplicate(p, z.Name))
		} else {
			seen = append(seen, z.Name)
		}
		for _, msg := range validation.IsValidLabelValue(z.Name) {
			errs = append(errs, field.Invalid(p, z.Name, msg))
		}
	}
	nodes := fldPath.Child("forNodes")
	if len(h.ForNodes) > maxNodeHints {
		return append(errs, field.TooMany(nodes, len(h.ForNodes), maxNodeHints))
	}
	seen = make([]string, 0, len(h.ForNodes))
	for i, n := range h.ForNodes {
		p := nodes.Index(i).Child("name")
		if slices.Contains(seen, n.Name) {
			errs = append(errs, field.Duplicate(p, n.Name))
		} else {
			seen = append(seen, n.Name)
		}
		for _, msg := range apivalidation.NameIsDNSSubdomain(n.Name, false) {
			errs = append(errs, field.Invalid(p, n.Name, msg))
		}
	}
	return errs
}
