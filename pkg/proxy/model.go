package proxy

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// defaultAffinityTimeout is the API's default of sessionAffinityConfig.clientIP.timeoutSeconds
// (3 hours), used when a ClientIP Service has none or one out of range.
const defaultAffinityTimeout = 10800

// maxAffinityTimeout is the API's upper bound of the affinity timeout (a day).
const maxAffinityTimeout = 86400

// servicePortName names one port of a Service, as EndpointSlices name their ports: the
// Service, the port's name ("" for a single unnamed port) and its protocol.
type servicePortName struct {
	types.NamespacedName
	Port     string
	Protocol v1.Protocol
}

func (n servicePortName) String() string {
	return fmt.Sprintf("%s/%s:%s/%s", n.Namespace, n.Name, n.Port, strings.ToLower(string(n.Protocol)))
}

// servicePort is what the proxy programs for one port of a Service in one IP family.
type servicePort struct {
	name      servicePortName
	clusterIP netip.Addr
	port      uint16
	// nodePort is 0 when the port has none.
	nodePort        uint16
	externalIPs     []netip.Addr
	loadBalancerIPs []netip.Addr
	// sourceRanges are the loadBalancerSourceRanges of this family; none means any source.
	sourceRanges []netip.Prefix
	// affinityTimeout is the ClientIP session affinity's timeout in seconds; 0 means none.
	affinityTimeout int32
	// externalLocal: externalTrafficPolicy Local (and the port is externally reachable).
	externalLocal bool
	// internalLocal: internalTrafficPolicy Local.
	internalLocal bool
}

// externallyAccessible says whether the port takes traffic from outside the cluster (a
// NodePort, an external IP or a load balancer IP), which the external chain handles.
func (s *servicePort) externallyAccessible() bool {
	return s.nodePort != 0 || len(s.externalIPs) > 0 || len(s.loadBalancerIPs) > 0
}

// usesClusterEndpoints says whether some traffic to the port may go to any endpoint.
func (s *servicePort) usesClusterEndpoints() bool {
	return !s.internalLocal || s.externallyAccessible()
}

// usesLocalEndpoints says whether some traffic to the port goes to this node's endpoints only.
func (s *servicePort) usesLocalEndpoints() bool {
	return s.internalLocal || (s.externalLocal && s.externallyAccessible())
}

// endpoint is one endpoint of a service port, from an EndpointSlice.
type endpoint struct {
	addr netip.AddrPort
	// local: the endpoint runs on this node.
	local bool
	// ready, serving and terminating are the EndpointSlice's conditions (ready defaults to
	// true, serving to true, terminating to false when unset).
	ready, serving, terminating bool
	// zoneHints and nodeHints are the topology hints, sorted; nil when there are none.
	zoneHints, nodeHints []string
}

// familyOf is the IP family of an address.
func familyOf(a netip.Addr) v1.IPFamily {
	if a.Is4() {
		return v1.IPv4Protocol
	}
	return v1.IPv6Protocol
}

// parseAddr parses an IP as the API writes it, unmapping IPv4-in-IPv6 forms.
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, err
	}
	return a.Unmap(), nil
}

// convertService turns a Service into the ports the proxy programs in each of families. A
// Service without a cluster IP (headless, ExternalName) has none. A port the proxy cannot
// program (unknown protocol, port out of range) is left out and reported in skipped; the
// others are kept.
func convertService(svc *v1.Service, families []v1.IPFamily) (ports map[v1.IPFamily][]*servicePort, skipped []error) {
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		return nil, nil
	}
	clusterIPs := svc.Spec.ClusterIPs
	if len(clusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		clusterIPs = []string{svc.Spec.ClusterIP}
	}
	if len(clusterIPs) == 0 || clusterIPs[0] == v1.ClusterIPNone {
		return nil, nil
	}
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	externallyAccessible := svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer ||
		len(svc.Spec.ExternalIPs) > 0
	externalLocal := externallyAccessible && svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal
	internalLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal

	var affinity int32
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		affinity = defaultAffinityTimeout
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			if t := *c.ClientIP.TimeoutSeconds; t > 0 && t <= maxAffinityTimeout {
				affinity = t
			} else {
				skipped = append(skipped, fmt.Errorf("session affinity timeout %d is out of range, using %d", t, defaultAffinityTimeout))
			}
		}
	}

	ports = map[v1.IPFamily][]*servicePort{}
	for _, family := range families {
		var clusterIP netip.Addr
		for _, s := range clusterIPs {
			a, err := parseAddr(s)
			if err != nil {
				skipped = append(skipped, fmt.Errorf("cluster IP %q: %w", s, err))
				continue
			}
			if familyOf(a) == family {
				clusterIP = a
				break
			}
		}
		if !clusterIP.IsValid() {
			continue
		}
		externalIPs, errs := addrsOfFamily(svc.Spec.ExternalIPs, family, "external IP")
		skipped = append(skipped, errs...)
		var lbIPs []netip.Addr
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP == "" || (ing.IPMode != nil && *ing.IPMode != v1.LoadBalancerIPModeVIP) {
				continue
			}
			a, err := parseAddr(ing.IP)
			if err != nil {
				skipped = append(skipped, fmt.Errorf("load balancer IP %q: %w", ing.IP, err))
				continue
			}
			if familyOf(a) == family {
				lbIPs = append(lbIPs, a)
			}
		}
		var ranges []netip.Prefix
		for _, s := range svc.Spec.LoadBalancerSourceRanges {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil {
				skipped = append(skipped, fmt.Errorf("load balancer source range %q: %w", s, err))
				continue
			}
			p = p.Masked()
			if familyOf(p.Addr()) != family {
				continue
			}
			if p.Bits() == 0 {
				// A zero-length range allows every source: the same as none.
				ranges = nil
				break
			}
			ranges = append(ranges, p)
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			if err := checkPort(sp); err != nil {
				skipped = append(skipped, fmt.Errorf("port %q: %w", sp.Name, err))
				continue
			}
			ports[family] = append(ports[family], &servicePort{
				name:            servicePortName{NamespacedName: nn, Port: sp.Name, Protocol: sp.Protocol},
				clusterIP:       clusterIP,
				port:            uint16(sp.Port),
				nodePort:        uint16(sp.NodePort),
				externalIPs:     externalIPs,
				loadBalancerIPs: lbIPs,
				sourceRanges:    ranges,
				affinityTimeout: affinity,
				externalLocal:   externalLocal,
				internalLocal:   internalLocal,
			})
		}
		slices.SortFunc(ports[family], func(a, b *servicePort) int {
			return cmp.Or(cmp.Compare(a.name.Port, b.name.Port), cmp.Compare(a.name.Protocol, b.name.Protocol))
		})
	}
	return ports, skipped
}

// checkPort refuses what cannot become a rule.
func checkPort(sp *v1.ServicePort) error {
	switch sp.Protocol {
	case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
	default:
		return fmt.Errorf("unknown protocol %q", sp.Protocol)
	}
	if sp.Port < 1 || sp.Port > 65535 {
		return fmt.Errorf("port %d out of range", sp.Port)
	}
	if sp.NodePort < 0 || sp.NodePort > 65535 {
		return fmt.Errorf("node port %d out of range", sp.NodePort)
	}
	return nil
}

// addrsOfFamily parses the addresses of family in ss, reporting those it cannot parse.
func addrsOfFamily(ss []string, family v1.IPFamily, what string) (addrs []netip.Addr, errs []error) {
	for _, s := range ss {
		a, err := parseAddr(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", what, s, err))
			continue
		}
		if familyOf(a) == family && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs, errs
}

// sliceInfo is what the proxy keeps of one EndpointSlice.
type sliceInfo struct {
	family    v1.IPFamily
	ports     []slicePort
	endpoints []sliceEndpoint
}

type slicePort struct {
	name     string
	protocol v1.Protocol
	port     uint16
}

type sliceEndpoint struct {
	addr                        netip.Addr
	local                       bool
	ready, serving, terminating bool
	zoneHints, nodeHints        []string
}

// convertSlice turns an EndpointSlice into what the proxy keeps, for the Service it names
// (label kubernetes.io/service-name). A slice of FQDNs, or of a family not proxied, is
// nil; ports and endpoints it cannot use are left out and reported in skipped.
func convertSlice(slice *discovery.EndpointSlice, nodeName string, families []v1.IPFamily) (svc types.NamespacedName, info *sliceInfo, skipped []error) {
	name := slice.Labels[discovery.LabelServiceName]
	if name == "" {
		return svc, nil, []error{fmt.Errorf("no %s label", discovery.LabelServiceName)}
	}
	svc = types.NamespacedName{Namespace: slice.Namespace, Name: name}
	var family v1.IPFamily
	switch slice.AddressType {
	case discovery.AddressTypeIPv4:
		family = v1.IPv4Protocol
	case discovery.AddressTypeIPv6:
		family = v1.IPv6Protocol
	default:
		return svc, nil, nil
	}
	if !slices.Contains(families, family) {
		return svc, nil, nil
	}
	info = &sliceInfo{family: family}
	for _, p := range slice.Ports {
		if p.Port == nil || *p.Port < 1 || *p.Port > 65535 {
			skipped = append(skipped, fmt.Errorf("port %q has no valid number", ptrString(p.Name)))
			continue
		}
		protocol := v1.ProtocolTCP
		if p.Protocol != nil {
			protocol = *p.Protocol
		}
		info.ports = append(info.ports, slicePort{name: ptrString(p.Name), protocol: protocol, port: uint16(*p.Port)})
	}
	for _, ep := range slice.Endpoints {
		if len(ep.Addresses) == 0 {
			continue
		}
		a, err := parseAddr(ep.Addresses[0])
		if err != nil || familyOf(a) != family {
			skipped = append(skipped, fmt.Errorf("endpoint address %q is not an %s address", ep.Addresses[0], family))
			continue
		}
		se := sliceEndpoint{
			addr:        a,
			local:       nodeName != "" && ep.NodeName != nil && *ep.NodeName == nodeName,
			ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
			serving:     ep.Conditions.Serving == nil || *ep.Conditions.Serving,
			terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
		}
		if ep.Hints != nil {
			for _, z := range ep.Hints.ForZones {
				se.zoneHints = append(se.zoneHints, z.Name)
			}
			for _, n := range ep.Hints.ForNodes {
				se.nodeHints = append(se.nodeHints, n.Name)
			}
			slices.Sort(se.zoneHints)
			slices.Sort(se.nodeHints)
		}
		info.endpoints = append(info.endpoints, se)
	}
	return svc, info, skipped
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// endpointsFor gathers the endpoints of port from a Service's slices: one per address and
// port, a running endpoint winning over a terminating one with the same address (a pod IP
// reused before the old pod is gone), sorted by address.
func endpointsFor(name servicePortName, family v1.IPFamily, slices_ []*sliceInfo) []endpoint {
	byAddr := map[netip.AddrPort]endpoint{}
	for _, s := range slices_ {
		if s.family != family {
			continue
		}
		for _, p := range s.ports {
			if p.name != name.Port || p.protocol != name.Protocol {
				continue
			}
			for _, se := range s.endpoints {
				ep := endpoint{addr: netip.AddrPortFrom(se.addr, p.port), local: se.local, ready: se.ready,
					serving: se.serving, terminating: se.terminating, zoneHints: se.zoneHints, nodeHints: se.nodeHints}
				if _, seen := byAddr[ep.addr]; !seen || !ep.terminating {
					byAddr[ep.addr] = ep
				}
			}
		}
	}
	eps := make([]endpoint, 0, len(byAddr))
	for _, ep := range byAddr {
		eps = append(eps, ep)
	}
	slices.SortFunc(eps, func(a, b endpoint) int { return a.addr.Compare(b.addr) })
	return eps
}

// Topology modes, from the endpoints' hints (the Service's trafficDistribution, as the
// EndpointSlice controller wrote it).
const (
	topologyNone     = ""
	topologyZone     = v1.ServiceTrafficDistributionPreferSameZone
	topologySameNode = v1.ServiceTrafficDistributionPreferSameNode
)

// categorizeEndpoints is kube-proxy's choice of endpoints for one service port:
//
//   - cluster: the endpoints traffic policy Cluster uses: the ready ones (narrowed by
//     topology hints when every ready endpoint has one and one is for this node or zone),
//     or, when none is ready, the serving and terminating ones; nil if the port never
//     uses policy Cluster;
//   - local: the same for policy Local among this node's endpoints (ready ones, else
//     serving and terminating ones); nil if the port never uses policy Local;
//   - reachable: the union of the two;
//   - hasAny: the port has a usable endpoint somewhere in the cluster.
func categorizeEndpoints(sp *servicePort, eps []endpoint, nodeName, zone string) (cluster, local, reachable []endpoint, hasAny bool) {
	if len(eps) == 0 {
		return nil, nil, nil, false
	}
	mode := topologyNone
	if sp.usesClusterEndpoints() {
		mode = topologyMode(eps, nodeName, zone)
		cluster = filterEndpoints(eps, func(ep endpoint) bool { return ep.ready && availableForTopology(ep, mode, nodeName, zone) })
		if len(cluster) == 0 {
			cluster = filterEndpoints(eps, func(ep endpoint) bool { return ep.serving && ep.terminating })
		}
		hasAny = len(cluster) > 0
	}
	if !sp.usesLocalEndpoints() {
		return cluster, nil, cluster, hasAny
	}
	var localReady, localServingTerminating bool
	for _, ep := range eps {
		switch {
		case ep.ready:
			hasAny = true
			localReady = localReady || ep.local
		case ep.serving && ep.terminating:
			hasAny = true
			localServingTerminating = localServingTerminating || ep.local
		}
	}
	terminatingOnly := false
	switch {
	case localReady:
		local = filterEndpoints(eps, func(ep endpoint) bool { return ep.local && ep.ready })
	case localServingTerminating:
		terminatingOnly = true
		local = filterEndpoints(eps, func(ep endpoint) bool { return ep.local && ep.serving && ep.terminating })
	}
	if !sp.usesClusterEndpoints() {
		return nil, local, local, hasAny
	}
	if mode == topologyNone && !terminatingOnly {
		// cluster holds every ready endpoint, so every ready local one too.
		return cluster, local, cluster, hasAny
	}
	reachable = append([]endpoint(nil), cluster...)
	for _, ep := range local {
		if !slices.ContainsFunc(reachable, func(r endpoint) bool { return r.addr == ep.addr }) {
			reachable = append(reachable, ep)
		}
	}
	slices.SortFunc(reachable, func(a, b endpoint) int { return a.addr.Compare(b.addr) })
	return cluster, local, reachable, hasAny
}

// topologyMode is PreferSameNode when every ready endpoint has a node hint and one is for
// this node, else PreferSameZone when every ready endpoint has a zone hint and one is for
// this node's zone, else none.
func topologyMode(eps []endpoint, nodeName, zone string) string {
	anyReady, allNode, forNode, allZone, forZone := false, true, false, true, false
	for _, ep := range eps {
		if !ep.ready {
			continue
		}
		anyReady = true
		if len(ep.nodeHints) == 0 {
			allNode = false
		} else if slices.Contains(ep.nodeHints, nodeName) {
			forNode = true
		}
		if len(ep.zoneHints) == 0 {
			allZone = false
		} else if slices.Contains(ep.zoneHints, zone) {
			forZone = true
		}
	}
	switch {
	case !anyReady:
		return topologyNone
	case allNode && forNode:
		return topologySameNode
	case allZone && forZone && zone != "":
		return topologyZone
	}
	return topologyNone
}

func availableForTopology(ep endpoint, mode, nodeName, zone string) bool {
	switch mode {
	case topologySameNode:
		return slices.Contains(ep.nodeHints, nodeName)
	case topologyZone:
		return slices.Contains(ep.zoneHints, zone)
	}
	return true
}

func filterEndpoints(eps []endpoint, keep func(endpoint) bool) []endpoint {
	var out []endpoint
	for _, ep := range eps {
		if keep(ep) {
			out = append(out, ep)
		}
	}
	return out
}
