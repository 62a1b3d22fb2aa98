package endpointslicemirroring

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	endpointsliceutil "k8s.io/endpointslice/util"
	utilnet "k8s.io/utils/net"

	"github.com/berth-cluster/berth/pkg/controllers/endpoints"
)

// mirror is what one Endpoints' slices should hold: a group of endpoints per address type
// and set of ports, and what could not be mirrored.
type mirror struct {
	groups []*group // in the order of the repacked subsets, IPv4 before IPv6
	// invalid counts the addresses whose IP does not parse; tooMany those left out beyond
	// the cap on each subset.
	invalid, tooMany int
}

// group is the endpoints of one slice: one subset's addresses of one family.
type group struct {
	key         sliceKey
	addressType discovery.AddressType
	ports       []discovery.EndpointPort
	endpoints   []discovery.Endpoint
	index       map[endpointKey]int // position in endpoints
}

// desiredMirror is the mirror of ep's subsets, repacked, at most maxPerSubset addresses of
// each subset (its ready ones first).
func desiredMirror(ep *corev1.Endpoints, maxPerSubset int) mirror {
	var m mirror
	byKey := map[sliceKey]*group{}
	for _, ss := range endpoints.RepackSubsets(ep.Subsets) {
		ports := slicePorts(ss.Ports)
		added := 0
		add := func(addrs []corev1.EndpointAddress, ready bool) {
			for _, a := range addrs {
				if added >= maxPerSubset {
					m.tooMany++
					continue
				}
				e, family, ok := toEndpoint(a, ready)
				if !ok {
					m.invalid++
					continue
				}
				added++
				key := keyOf(family, ports)
				g := byKey[key]
				if g == nil {
					g = &group{key: key, addressType: family, ports: ports, index: map[endpointKey]int{}}
					byKey[key] = g
					m.groups = append(m.groups, g)
				}
				g.insert(e)
			}
		}
		add(ss.Addresses, true)
		add(ss.NotReadyAddresses, false)
	}
	slices.SortStableFunc(m.groups, func(a, b *group) int { return cmp.Compare(a.addressType, b.addressType) })
	return m
}

// insert adds e, or replaces the endpoint it duplicates.
func (g *group) insert(e discovery.Endpoint) {
	k := endpointKeyOf(&e)
	if i, ok := g.index[k]; ok {
		g.endpoints[i] = e
		return
	}
	g.index[k] = len(g.endpoints)
	g.endpoints = append(g.endpoints, e)
}

// toEndpoint is an Endpoints address as a slice's endpoint, with its address type; ok is
// false for an IP that does not parse.
func toEndpoint(a corev1.EndpointAddress, ready bool) (e discovery.Endpoint, family discovery.AddressType, ok bool) {
	ip := utilnet.ParseIPSloppy(a.IP)
	if ip == nil {
		return e, "", false
	}
	family = discovery.AddressTypeIPv4
	if ip.To4() == nil {
		family = discovery.AddressTypeIPv6
	}
	a = *a.DeepCopy() // not the cache's
	e = discovery.Endpoint{
		Addresses:  []string{ip.String()}, // canonical, whatever form the Endpoints has
		Conditions: discovery.EndpointConditions{Ready: &ready},
		NodeName:   a.NodeName,
		TargetRef:  a.TargetRef,
	}
	if a.Hostname != "" {
		e.Hostname = &a.Hostname
	}
	return e, family, true
}

// slicePorts are an Endpoints subset's ports as a slice's.
func slicePorts(in []corev1.EndpointPort) []discovery.EndpointPort {
	out := make([]discovery.EndpointPort, 0, len(in))
	for _, p := range in {
		out = append(out, discovery.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol, AppProtocol: p.AppProtocol})
	}
	return out
}

// sliceKey tells the slices of one address type and set of ports, in whatever order.
type sliceKey string

func keyOf(family discovery.AddressType, ports []discovery.EndpointPort) sliceKey {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		// Quoted, so that no name can forge a separator.
		parts = append(parts, fmt.Sprintf("%q/%d/%q/%q", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol)))
	}
	slices.Sort(parts)
	return sliceKey(string(family) + " " + strings.Join(parts, ","))
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// endpointKey is what makes two endpoints one in a slice, as upstream's endpoint set has it:
// addresses, hostname and target. Its other fields may change in place.
type endpointKey struct{ addresses, hostname, namespace, name string }

func endpointKeyOf(e *discovery.Endpoint) endpointKey {
	addrs := slices.Clone(e.Addresses)
	slices.Sort(addrs)
	k := endpointKey{addresses: strings.Join(addrs, ","), hostname: deref(e.Hostname)}
	if e.TargetRef != nil {
		k.namespace, k.name = e.TargetRef.Namespace, e.TargetRef.Name
	}
	return k
}

// plan is the writes that bring the existing slices to the mirror.
type plan struct {
	create, update, delete []*discovery.EndpointSlice
	// unchanged are existing slices that already match.
	unchanged []*discovery.EndpointSlice
}

// planSlices compares ep's mirror with its existing slices. Each group keeps the first of
// its existing slices (by name), updated if it differs, and the others are deleted, as are
// the slices of groups no longer there; a group without a slice gets a new one, which takes
// over a slice of the same address type that would be deleted rather than be created
// beside it.
func planSlices(ep *corev1.Endpoints, m mirror, existing []*discovery.EndpointSlice) plan {
	var p plan
	byKey := map[sliceKey][]*discovery.EndpointSlice{}
	for _, s := range existing {
		k := keyOf(s.AddressType, s.Ports)
		byKey[k] = append(byKey[k], s)
	}
	for _, ss := range byKey {
		slices.SortFunc(ss, func(a, b *discovery.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, g := range m.groups {
		have := byKey[g.key]
		delete(byKey, g.key)
		want := newSlice(ep, g)
		if len(have) == 0 {
			p.create = append(p.create, want)
			continue
		}
		p.delete = append(p.delete, have[1:]...)
		if sliceMatches(have[0], want) {
			p.unchanged = append(p.unchanged, have[0])
			continue
		}
		want.Name, want.GenerateName = have[0].Name, ""
		p.update = append(p.update, want)
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		p.delete = append(p.delete, byKey[k]...)
	}

	// Recycle: a slice to delete becomes a slice to create, by name.
	for i := 0; i < len(p.create); {
		j := slices.IndexFunc(p.delete, func(s *discovery.EndpointSlice) bool { return s.AddressType == p.create[i].AddressType })
		if j < 0 {
			i++
			continue
		}
		s := p.create[i]
		s.Name, s.GenerateName = p.delete[j].Name, ""
		p.update = append(p.update, s)
		p.create = slices.Delete(p.create, i, i+1)
		p.delete = slices.Delete(p.delete, j, j+1)
	}
	return p
}

// newSlice is the slice of g for ep: ep's labels and annotations (but its trigger time and
// kubectl's last applied configuration), with the service-name and managed-by labels,
// controlled by ep. It has a generateName; planSlices names it when it updates a slice.
func newSlice(ep *corev1.Endpoints, g *group) *discovery.EndpointSlice {
	labels := maps.Clone(ep.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[discovery.LabelServiceName] = ep.Name
	labels[discovery.LabelManagedBy] = ControllerName
	annotations := maps.Clone(ep.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, corev1.EndpointsLastChangeTriggerTime)
	delete(annotations, corev1.LastAppliedConfigAnnotation)
	return &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ep.Namespace,
			GenerateName:    namePrefix(ep.Name),
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))},
		},
		AddressType: g.addressType,
		Ports:       g.ports,
		Endpoints:   slices.Clone(g.endpoints),
	}
}

// namePrefix is the generateName of an Endpoints' slices: "<name>-" when that is a valid
// prefix, else the name.
func namePrefix(name string) string {
	if prefix := name + "-"; len(validation.NameIsDNSSubdomain(prefix, true)) == 0 {
		return prefix
	}
	return name
}

// sliceMatches reports whether have already is want: the same labels, annotations and
// endpoints (in any order), and controlled by want's Endpoints, the same one (a slice of an
// earlier Endpoints of that name is rebuilt). Address type and ports match by the key.
func sliceMatches(have, want *discovery.EndpointSlice) bool {
	if !maps.Equal(have.Labels, want.Labels) || !maps.Equal(have.Annotations, want.Annotations) {
		return false
	}
	owner, wantOwner := metav1.GetControllerOf(have), metav1.GetControllerOf(want)
	if owner == nil || owner.UID != wantOwner.UID || owner.Kind != wantOwner.Kind || owner.Name != wantOwner.Name {
		return false
	}
	if len(have.Endpoints) != len(want.Endpoints) {
		return false
	}
	byKey := make(map[endpointKey]*discovery.Endpoint, len(have.Endpoints))
	for i := range have.Endpoints {
		byKey[endpointKeyOf(&have.Endpoints[i])] = &have.Endpoints[i]
	}
	for i := range want.Endpoints {
		got, ok := byKey[endpointKeyOf(&want.Endpoints[i])]
		if !ok || !endpointsliceutil.EndpointsEqualBeyondHash(got, &want.Endpoints[i]) {
			return false
		}
	}
	return true
}
