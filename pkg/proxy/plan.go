package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"
)

// familyRules holds what differs between the ip and the ip6 rules.
type familyRules struct {
	family    knftables.Family
	apiFamily v1.IPFamily
	ipX       string // "ip" or "ip6", as in "ip daddr"
	addrType  string // "ipv4_addr" or "ipv6_addr"
	loopback  string // "127.0.0.0/8" or "::1"
}

var (
	ipv4Rules = &familyRules{knftables.IPv4Family, v1.IPv4Protocol, "ip", "ipv4_addr", "127.0.0.0/8"}
	ipv6Rules = &familyRules{knftables.IPv6Family, v1.IPv6Protocol, "ip6", "ipv6_addr", "::1"}
)

func rulesFor(family v1.IPFamily) *familyRules {
	if family == v1.IPv6Protocol {
		return ipv6Rules
	}
	return ipv4Rules
}

// Names of the chains, sets and maps every table has.
const (
	// TableName is the nftables table, in family ip and (dual-stack) ip6.
	TableName = "berth-proxy"

	filterPreroutingPreDNATChain = "filter-prerouting-pre-dnat"
	filterOutputPreDNATChain     = "filter-output-pre-dnat"
	filterInputChain             = "filter-input"
	filterForwardChain           = "filter-forward"
	filterOutputChain            = "filter-output"
	natPreroutingChain           = "nat-prerouting"
	natOutputChain               = "nat-output"
	natPostroutingChain          = "nat-postrouting"

	servicesChain        = "services"
	masqueradingChain    = "masquerading"
	serviceCheckChain    = "service-endpoints-check"
	nodePortCheckChain   = "nodeport-endpoints-check"
	firewallCheckChain   = "firewall-check"
	clusterIPsCheckChain = "cluster-ips-check"
	rejectChain          = "reject-chain"

	clusterIPsSet         = "cluster-ips"
	nodePortIPsSet        = "nodeport-ips"
	hairpinSet            = "hairpin-connections"
	serviceIPsMap         = "service-ips"
	serviceNodePortsMap   = "service-nodeports"
	noEndpointServicesMap = "no-endpoint-services"
	noEndpointNodePorts   = "no-endpoint-nodeports"
	firewallIPsMap        = "firewall-ips"

	// masqueradeMark is the packet mark bit that asks the postrouting chain to masquerade
	// (kube-proxy's default bit, 14).
	masqueradeMark = "0x4000"
	markMasquerade = "mark set mark or " + masqueradeMark

	// Prefixes of the per-Service chains and sets; every such name holds a "/".
	clusterChainPrefix  = "service-"
	localChainPrefix    = "local-"
	externalChainPrefix = "external-"
	firewallChainPrefix = "firewall-"
	endpointChainPrefix = "endpoint-"
	affinitySetPrefix   = "affinity-"
)

// elementContainers are the sets and maps that hold the Services' elements, each flushed
// and refilled by a full sync.
var elementContainers = []string{clusterIPsSet, hairpinSet, serviceIPsMap, serviceNodePortsMap,
	noEndpointServicesMap, noEndpointNodePorts, firewallIPsMap}

// isSet tells the sets among elementContainers from the maps.
func isSet(container string) bool { return container == clusterIPsSet || container == hairpinSet }

// isServiceChain tells the chains a Service owns from the fixed ones.
func isServiceChain(name string) bool { return strings.Contains(name, "/") }

func isAffinitySet(name string) bool { return strings.HasPrefix(name, affinitySetPrefix) }

// objectName is prefix + an 8-character hash of parts + the readable parts, cut to the
// longest name nft takes (the kernel's 256 bytes with the terminating NUL); the hash keeps
// cut names distinct.
func objectName(prefix string, parts ...string) string {
	s := strings.Join(parts, "/")
	sum := sha256.Sum256([]byte(prefix + s))
	name := prefix + base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + s
	if len(name) >= knftables.NameLengthMax {
		name = name[:knftables.NameLengthMax-1]
	}
	return name
}

func portBase(sp *servicePort) []string {
	return []string{sp.name.Namespace, sp.name.Name, strings.ToLower(string(sp.name.Protocol)), sp.name.Port}
}

func endpointBase(sp *servicePort, e endpoint) []string {
	return append(portBase(sp), "_"+strings.ReplaceAll(e.addr.Addr().String(), ":", "."), strconv.Itoa(int(e.addr.Port())))
}

// elemKey names one element of one of the shared sets and maps.
type elemKey struct {
	container string // a set or map name
	key       string // the key's parts joined by " . "
}

func (k elemKey) parts() []string { return strings.Split(k.key, " . ") }

// servicePlan is everything one Service puts into one family's table: elements of the
// shared sets and maps (value "" for a set), its own chains with their rules in order, its
// affinity sets (name → timeout in seconds). It is a pure function of the Service, its
// EndpointSlices and the proxy's configuration, so that two plans compare to find what a
// sync must change.
type servicePlan struct {
	elements map[elemKey]string
	chains   map[string][]string
	affinity map[string]int32
	// udp is what the conntrack cleanup needs of the UDP ports; not part of equal.
	udp []udpPort
}

// udpPort is what the conntrack cleanup needs of one UDP service port.
type udpPort struct {
	frontends []netip.AddrPort // clusterIP, external and load balancer IPs, with the port
	nodePort  uint16
	// serving are the endpoints a flow may keep going to: every serving one, whatever the
	// policies (a flow to a terminating endpoint is not cut, as for TCP).
	serving []netip.AddrPort
}

func newServicePlan() *servicePlan {
	return &servicePlan{elements: map[elemKey]string{}, chains: map[string][]string{}, affinity: map[string]int32{}}
}

func (p *servicePlan) equal(o *servicePlan) bool {
	if p == nil || o == nil {
		return p == o
	}
	return maps.Equal(p.elements, o.elements) && maps.Equal(p.affinity, o.affinity) &&
		maps.EqualFunc(p.chains, o.chains, slices.Equal)
}

func (p *servicePlan) hasUDP() bool { return p != nil && len(p.udp) > 0 }

// planner turns Services into plans for one family. It does no I/O.
type planner struct {
	fam          *familyRules
	nodeName     string
	zone         string         // the node's topology.kubernetes.io/zone
	nodeIPs      []netip.Addr   // of this family
	clusterCIDRs []netip.Prefix // of this family
}

// planService is the plan of one Service: its ports and, for each, its endpoints. It is
// nil when the Service has no port in this family.
func (pl *planner) planService(ports []*servicePort, endpoints map[servicePortName][]endpoint) *servicePlan {
	if len(ports) == 0 {
		return nil
	}
	plan := newServicePlan()
	for _, sp := range ports {
		pl.planPort(plan, sp, endpoints[sp.name])
	}
	return plan
}

// planPort adds one service port to plan. The layout (see the package doc):
//
//	cluster-ips                               ∋ clusterIP
//	service-ips[clusterIP . proto . port]     → goto service-… (local-… with internalTrafficPolicy Local)
//	service-ips[externalIP|lbIP . proto . port] → goto external-…
//	service-nodeports[proto . nodePort]       → goto external-…
//	firewall-ips[lbIP . proto . port]         → goto firewall-… (loadBalancerSourceRanges)
//	no-endpoint-services / no-endpoint-nodeports → goto reject-chain (no endpoint at all),
//	                                             or drop (policy Local and none on this node)
//	hairpin-connections                       ∋ localEndpointIP . localEndpointIP . proto . port
func (pl *planner) planPort(plan *servicePlan, sp *servicePort, eps []endpoint) {
	f := pl.fam
	proto := strings.ToLower(string(sp.name.Protocol))
	port := strconv.Itoa(int(sp.port))
	cluster, local, reachable, hasAny := categorizeEndpoints(sp, eps, pl.nodeName, pl.zone)

	clusterChain := objectName(clusterChainPrefix, portBase(sp)...)
	localChain := objectName(localChainPrefix, portBase(sp)...)
	externalChain := objectName(externalChainPrefix, portBase(sp)...)
	firewallChain := objectName(firewallChainPrefix, portBase(sp)...)
	usesCluster := len(cluster) > 0 && sp.usesClusterEndpoints()
	usesLocal := len(local) > 0 && sp.usesLocalEndpoints()

	internalChain, hasInternal := clusterChain, hasAny
	if sp.internalLocal {
		internalChain, hasInternal = localChain, len(local) > 0
	}
	externalPolicyChain, hasExternal := clusterChain, hasAny
	if sp.externalLocal {
		externalPolicyChain, hasExternal = localChain, len(local) > 0
	}
	internalVerdict, externalVerdict := "drop", "drop"
	if !hasAny {
		internalVerdict, externalVerdict = "goto "+rejectChain, "goto "+rejectChain
	}

	ipKey := func(a netip.Addr) string { return a.String() + " . " + proto + " . " + port }
	plan.elements[elemKey{clusterIPsSet, sp.clusterIP.String()}] = ""
	if hasInternal {
		plan.elements[elemKey{serviceIPsMap, ipKey(sp.clusterIP)}] = "goto " + internalChain
	} else {
		plan.elements[elemKey{noEndpointServicesMap, ipKey(sp.clusterIP)}] = internalVerdict
	}
	usesFirewall := len(sp.loadBalancerIPs) > 0 && len(sp.sourceRanges) > 0
	for _, a := range slices.Concat(sp.externalIPs, sp.loadBalancerIPs) {
		if hasAny {
			plan.elements[elemKey{serviceIPsMap, ipKey(a)}] = "goto " + externalChain
		}
		if !hasExternal {
			plan.elements[elemKey{noEndpointServicesMap, ipKey(a)}] = externalVerdict
		}
	}
	if usesFirewall {
		for _, a := range sp.loadBalancerIPs {
			plan.elements[elemKey{firewallIPsMap, ipKey(a)}] = "goto " + firewallChain
		}
	}
	if sp.nodePort != 0 {
		key := proto + " . " + strconv.Itoa(int(sp.nodePort))
		if hasAny {
			plan.elements[elemKey{serviceNodePortsMap, key}] = "goto " + externalChain
		}
		if !hasExternal {
			plan.elements[elemKey{noEndpointNodePorts, key}] = externalVerdict
		}
	}
	for _, e := range reachable {
		if e.local {
			k := e.addr.Addr().String() + " . " + e.addr.Addr().String() + " . " + proto + " . " + strconv.Itoa(int(e.addr.Port()))
			plan.elements[elemKey{hairpinSet, k}] = ""
		}
	}
	if sp.name.Protocol == v1.ProtocolUDP {
		u := udpPort{nodePort: sp.nodePort}
		for _, a := range slices.Concat([]netip.Addr{sp.clusterIP}, sp.externalIPs, sp.loadBalancerIPs) {
			u.frontends = append(u.frontends, netip.AddrPortFrom(a, sp.port))
		}
		for _, e := range eps {
			if e.serving {
				u.serving = append(u.serving, e.addr)
			}
		}
		plan.udp = append(plan.udp, u)
	}

	if hasAny && sp.externallyAccessible() {
		var rules []string
		if !sp.externalLocal {
			// Endpoints may be on another node: the reply must come back through this one.
			rules = append(rules, markMasquerade)
		} else if usesCluster {
			// Pods and the node itself are not subject to the policy (as if they went out
			// to a load balancer and came back); the node's own traffic is masqueraded, as
			// its source is a local address.
			if len(pl.clusterCIDRs) > 0 {
				rules = append(rules, f.ipX+" saddr { "+joinPrefixes(pl.clusterCIDRs)+" } goto "+clusterChain)
			}
			rules = append(rules, "fib saddr type local "+markMasquerade, "fib saddr type local goto "+clusterChain)
		}
		if hasExternal {
			rules = append(rules, "goto "+externalPolicyChain)
		}
		plan.chains[externalChain] = rules
	}
	if usesFirewall {
		sources := joinPrefixes(sp.sourceRanges)
		// A load balancer that puts its IP on the node loops the node's own requests back
		// with that IP as source: let them in when the node may connect.
		for _, ip := range pl.nodeIPs {
			if slices.ContainsFunc(sp.sourceRanges, func(p netip.Prefix) bool { return p.Contains(ip) }) {
				for _, a := range sp.loadBalancerIPs {
					sources += ", " + a.String()
				}
				break
			}
		}
		plan.chains[firewallChain] = []string{f.ipX + " saddr != { " + sources + " } drop"}
	}
	if usesCluster {
		plan.chains[clusterChain] = pl.dnatRules(plan, sp, cluster)
	}
	if usesLocal {
		plan.chains[localChain] = pl.dnatRules(plan, sp, local)
	}
}

// dnatRules picks one of eps at random (numgen); with session affinity, a client in an
// endpoint's affinity set goes to that endpoint first, and each endpoint has a chain that
// records the client in its set (with the Service's timeout) before the DNAT.
func (pl *planner) dnatRules(plan *servicePlan, sp *servicePort, eps []endpoint) []string {
	f := pl.fam
	proto := strings.ToLower(string(sp.name.Protocol))
	if sp.affinityTimeout == 0 {
		if len(eps) == 1 {
			return []string{"meta l4proto " + proto + " dnat to " + eps[0].addr.String()}
		}
		var b strings.Builder
		for i, e := range eps {
			if i > 0 {
				b.WriteString(" , ")
			}
			fmt.Fprintf(&b, "%d : %s . %d", i, e.addr.Addr(), e.addr.Port())
		}
		return []string{fmt.Sprintf("meta l4proto %s dnat %s addr . port to numgen random mod %d map { %s }", proto, f.ipX, len(eps), b.String())}
	}
	var rules []string
	var b strings.Builder
	for i, e := range eps {
		chain := objectName(endpointChainPrefix, endpointBase(sp, e)...)
		// The timeout is part of the set's name: a set's timeout cannot change in place,
		// so a new timeout makes a new set and the old one goes as stale.
		set := objectName(affinitySetPrefix, append(endpointBase(sp, e), strconv.Itoa(int(sp.affinityTimeout)))...)
		plan.affinity[set] = sp.affinityTimeout
		plan.chains[chain] = []string{
			"update @" + set + " { " + f.ipX + " saddr }",
			"meta l4proto " + proto + " dnat to " + e.addr.String(),
		}
		rules = append(rules, f.ipX+" saddr @"+set+" goto "+chain)
		if i > 0 {
			b.WriteString(" , ")
		}
		fmt.Fprintf(&b, "%d : goto %s", i, chain)
	}
	return append(rules, fmt.Sprintf("numgen random mod %d vmap { %s }", len(eps), b.String()))
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Masked().String()
	}
	return strings.Join(s, ", ")
}
