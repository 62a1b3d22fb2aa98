package endpoints

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RepackSubsets returns subsets in the canonical layout of core/v1 Endpoints, whatever way
// they were grouped: every address that serves exactly the same ports (with the same
// readiness on each) ends up in one subset with those ports, addresses are counted once by
// IP and target UID (the first one seen is kept whole), an address not ready on a port is
// not ready there even if another subset lists it ready, and addresses without any port are
// kept in a subset of their own. Subsets, their addresses and their ports come out sorted,
// so that two Endpoints that mean the same compare equal. The input is not modified.
//
// It is the layout upstream's RepackSubsets gives (pkg/api/v1/endpoints); only the order of
// the subsets and of their ports differs, upstream's being that of their hashes.
func RepackSubsets(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	// 1. Expand: for every port (noPort for a subset without any), its addresses and
	// whether each is ready there.
	addresses := map[addressKey]corev1.EndpointAddress{}
	byPort := map[portKey]map[addressKey]bool{}
	ports := map[portKey]corev1.EndpointPort{}
	add := func(port portKey, addrs []corev1.EndpointAddress, ready bool) {
		for _, a := range addrs {
			k := keyOf(&a)
			if _, ok := addresses[k]; !ok {
				addresses[k] = a
			}
			if byPort[port] == nil {
				byPort[port] = map[addressKey]bool{}
			}
			if wasReady, ok := byPort[port][k]; !ok || wasReady {
				byPort[port][k] = ready // not ready wins
			}
		}
	}
	for _, ss := range subsets {
		if len(ss.Ports) == 0 {
			add(noPort, ss.Addresses, true)
			add(noPort, ss.NotReadyAddresses, false)
			continue
		}
		for _, p := range ss.Ports {
			k := portKeyOf(p)
			ports[k] = p
			add(k, ss.Addresses, true)
			add(k, ss.NotReadyAddresses, false)
		}
	}

	// 2. Group the ports by the addresses (and readiness) they have.
	type group struct {
		addrs map[addressKey]bool
		ports []corev1.EndpointPort
	}
	groups := map[string]*group{}
	for port, addrs := range byPort {
		sig := signature(addrs)
		g := groups[sig]
		if g == nil {
			g = &group{addrs: addrs}
			groups[sig] = g
		}
		if port != noPort {
			g.ports = append(g.ports, ports[port])
		}
	}

	// 3. One subset per group, sorted.
	out := make([]corev1.EndpointSubset, 0, len(groups))
	for _, g := range groups {
		var ss corev1.EndpointSubset
		for k, ready := range g.addrs {
			if ready {
				ss.Addresses = append(ss.Addresses, addresses[k])
			} else {
				ss.NotReadyAddresses = append(ss.NotReadyAddresses, addresses[k])
			}
		}
		slices.SortFunc(ss.Addresses, compareAddresses)
		slices.SortFunc(ss.NotReadyAddresses, compareAddresses)
		ss.Ports = g.ports
		slices.SortFunc(ss.Ports, comparePorts)
		out = append(out, ss)
	}
	slices.SortFunc(out, compareSubsets)
	return out
}

// addressKey is what makes an address one: its IP and the object it points at. Two pods
// may share an IP (host network), and stay two addresses.
type addressKey struct {
	ip  string
	uid types.UID
}

func keyOf(a *corev1.EndpointAddress) addressKey {
	k := addressKey{ip: a.IP}
	if a.TargetRef != nil {
		k.uid = a.TargetRef.UID
	}
	return k
}

// portKey is an EndpointPort by value (its AppProtocol is a pointer); noPort stands for the
// ports of a subset without any.
type portKey struct {
	name, protocol, appProtocol string
	port                        int32
	hasAppProtocol, none        bool
}

var noPort = portKey{none: true}

func portKeyOf(p corev1.EndpointPort) portKey {
	k := portKey{name: p.Name, protocol: string(p.Protocol), port: p.Port}
	if p.AppProtocol != nil {
		k.appProtocol, k.hasAppProtocol = *p.AppProtocol, true
	}
	return k
}

// signature is a string that two sets of addresses share when they hold the same addresses
// with the same readiness.
func signature(addrs map[addressKey]bool) string {
	keys := make([]string, 0, len(addrs))
	for k, ready := range addrs {
		r := "n"
		if ready {
			r = "r"
		}
		// IPs and UIDs hold no NUL.
		keys = append(keys, k.ip+"\x00"+string(k.uid)+"\x00"+r)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x01")
}

// compareAddresses orders addresses by IP, then by target UID, an address without a target
// first.
func compareAddresses(a, b corev1.EndpointAddress) int {
	if c := strings.Compare(a.IP, b.IP); c != 0 {
		return c
	}
	switch {
	case a.TargetRef == nil && b.TargetRef == nil:
		return 0
	case a.TargetRef == nil:
		return -1
	case b.TargetRef == nil:
		return 1
	}
	return strings.Compare(string(a.TargetRef.UID), string(b.TargetRef.UID))
}

func comparePorts(a, b corev1.EndpointPort) int {
	ka, kb := portKeyOf(a), portKeyOf(b)
	return cmp.Or(
		strings.Compare(ka.name, kb.name),
		cmp.Compare(ka.port, kb.port),
		strings.Compare(ka.protocol, kb.protocol),
		compareBool(ka.hasAppProtocol, kb.hasAppProtocol),
		strings.Compare(ka.appProtocol, kb.appProtocol),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// compareSubsets orders repacked subsets, whose address sets all differ, by their ready
// addresses, then their not-ready ones, then their ports.
func compareSubsets(a, b corev1.EndpointSubset) int {
	return cmp.Or(
		slices.CompareFunc(a.Addresses, b.Addresses, compareAddresses),
		slices.CompareFunc(a.NotReadyAddresses, b.NotReadyAddresses, compareAddresses),
		slices.CompareFunc(a.Ports, b.Ports, comparePorts),
	)
}
