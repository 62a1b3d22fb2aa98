package dns

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
)

// SchemaVersion is the version of Kubernetes' DNS specification the server follows, served
// as dns-version.<zone> TXT.
const SchemaVersion = "1.1.0"

// schemaTTL is dns-version's TTL, the specification's example and CoreDNS's value.
const schemaTTL = 28800

// maxChain bounds a chain of ExternalName Services that name each other.
const maxChain = 8

// dnsService is the Service whose cluster IPs ns.dns.<zone>, the zone's name server, has.
var dnsService = serviceKey{namespace: "kube-system", name: "kube-dns"}

// answer is what resolve decided for one question; ServeDNS turns it into the response.
type answer struct {
	rcode  int
	answer []dns.RR
	extra  []dns.RR
	// zone: the answer is the zone's own (authoritative; a negative one carries the SOA).
	zone bool
	// forward: not the zone's: the question goes to the upstream servers as it is.
	forward bool
	// follow is an ExternalName's target outside the zone, looked up upstream for the
	// question's type after the CNAME in answer.
	follow string
}

// resolver answers questions from the store: the zone's names as the specification and
// CoreDNS's kubernetes plugin have them, and PTR for the cluster's addresses. It does no I/O.
type resolver struct {
	zone  string // "cluster.local."
	ttl   uint32
	store *store
}

func (r *resolver) nxdomain() answer { return answer{rcode: dns.RcodeNameError, zone: true} }
func (r *resolver) nodata() answer   { return answer{rcode: dns.RcodeSuccess, zone: true} }

func (r *resolver) found(rrs, extra []dns.RR) answer {
	return answer{rcode: dns.RcodeSuccess, zone: true, answer: rrs, extra: extra}
}

// resolve answers q.
func (r *resolver) resolve(q dns.Question) answer {
	return r.resolveChain(q, 0)
}

func (r *resolver) resolveChain(q dns.Question, depth int) answer {
	name := strings.ToLower(dns.Fqdn(q.Name))
	if !r.inZone(name) {
		if q.Qtype == dns.TypePTR && q.Qclass == dns.ClassINET {
			if ip, ok := parseReverse(name); ok {
				if rrs := r.ptr(q.Name, ip); len(rrs) > 0 {
					return r.found(rrs, nil)
				}
			}
		}
		// Everything else, and the reverse names of addresses the cluster does not know
		// (CoreDNS's "fallthrough in-addr.arpa ip6.arpa"), is the upstream servers'.
		return answer{forward: true}
	}
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		return answer{rcode: dns.RcodeRefused, zone: true}
	}
	switch q.Qtype {
	case dns.TypeAXFR, dns.TypeIXFR:
		return answer{rcode: dns.RcodeRefused, zone: true}
	}
	labels := dns.SplitDomainName(name[:len(name)-len(r.zone)])
	n := len(labels)
	switch {
	case n == 0:
		return r.apex(q)
	case n == 1 && labels[0] == "dns-version":
		if q.Qtype == dns.TypeTXT {
			return r.found([]dns.RR{&dns.TXT{Hdr: r.hdr(q.Name, dns.TypeTXT, schemaTTL), Txt: []string{SchemaVersion}}}, nil)
		}
		return r.nodata()
	case n == 2 && labels[0] == "ns" && labels[1] == "dns":
		return r.nameServer(q)
	case labels[n-1] == "svc":
		return r.svc(q, labels[:n-1], depth)
	case labels[n-1] == "pod":
		return r.pod(q, labels[:n-1])
	}
	return r.nxdomain()
}

// inZone says whether name (lower case) is the zone's or below it, as written: a name that
// reaches the zone only through escapes is not the cluster's.
func (r *resolver) inZone(name string) bool {
	return name == r.zone || strings.HasSuffix(name, "."+r.zone) && dns.IsSubDomain(r.zone, name)
}

// apex answers for the zone's own name: its SOA and NS, nothing else.
func (r *resolver) apex(q dns.Question) answer {
	switch q.Qtype {
	case dns.TypeSOA:
		return r.found([]dns.RR{r.soa()}, nil)
	case dns.TypeNS:
		ns := &dns.NS{Hdr: r.hdr(q.Name, dns.TypeNS, r.ttl), Ns: "ns.dns." + r.zone}
		return r.found([]dns.RR{ns}, r.nameServerAddresses("ns.dns."+r.zone, dns.TypeA, dns.TypeAAAA))
	}
	return r.nodata()
}

// nameServer answers ns.dns.<zone>: the DNS Service's cluster IPs.
func (r *resolver) nameServer(q dns.Question) answer {
	return r.found(r.nameServerAddresses(q.Name, q.Qtype), nil)
}

func (r *resolver) nameServerAddresses(name string, types ...uint16) []dns.RR {
	sr := r.store.lookup(dnsService.namespace, dnsService.name)
	if sr == nil || sr.svc == nil {
		return nil
	}
	var out []dns.RR
	for _, t := range types {
		for _, ip := range sr.svc.clusterIPs {
			if rr := r.address(name, t, ip); rr != nil {
				out = append(out, rr)
			}
		}
	}
	return out
}

// soa is the zone's SOA, as CoreDNS's: its minimum (the negative-caching TTL) is the records'
// TTL.
func (r *resolver) soa() dns.RR {
	return &dns.SOA{
		Hdr:     r.hdr(r.zone, dns.TypeSOA, r.ttl),
		Ns:      "ns.dns." + r.zone,
		Mbox:    "hostmaster." + r.zone,
		Serial:  r.store.serial.Load(),
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  r.ttl,
	}
}

// svc answers the names under svc.<zone>; labels are those before "svc".
//
//	<ns>                              NODATA when the namespace exists, else NXDOMAIN
//	<service>.<ns>                    the Service (A/AAAA, SRV for every port, CNAME)
//	<endpoint>.<service>.<ns>         an endpoint by hostname or dashed address
//	_<port>._<proto>.<service>.<ns>   SRV for a named port
func (r *resolver) svc(q dns.Question, labels []string, depth int) answer {
	n := len(labels)
	switch n {
	case 0:
		return r.nodata()
	case 1:
		if r.store.namespaceExists(labels[0]) {
			return r.nodata()
		}
		return r.nxdomain()
	case 2, 3, 4:
	default:
		return r.nxdomain()
	}
	sr := r.store.lookup(labels[n-1], labels[n-2])
	if sr == nil || sr.svc == nil {
		return r.nxdomain()
	}
	serviceName := labels[n-2] + "." + labels[n-1] + ".svc." + r.zone
	switch n {
	case 2:
		return r.service(q, sr, serviceName, depth)
	case 3:
		return r.endpoint(q, sr, labels[0], serviceName)
	default:
		return r.port(q, sr, strings.TrimPrefix(labels[0], "_"), strings.TrimPrefix(labels[1], "_"), serviceName)
	}
}

// service answers <service>.<ns>.svc.<zone>.
func (r *resolver) service(q dns.Question, sr *serviceRecords, serviceName string, depth int) answer {
	switch sr.svc.kind {
	case kindExternalName:
		return r.externalName(q, sr, depth)
	case kindHeadless:
		// A headless Service's name exists while it has ready endpoints (the specification:
		// NXDOMAIN when there are none).
		var addrs []netip.Addr
		srv := newSRVSet()
		sr.eachReady(func(slice *endpointSlice, ep *endpoint, ip netip.Addr) {
			addrs = append(addrs, ip)
			if q.Qtype == dns.TypeSRV {
				target := endpointHostname(ep, ip) + "." + serviceName
				for _, p := range slice.ports {
					srv.add(target, p.port, ip)
				}
			}
		})
		if len(addrs) == 0 {
			return r.nxdomain()
		}
		if q.Qtype == dns.TypeSRV {
			return r.found(srv.records(r, q.Name))
		}
		return r.found(r.shuffled(r.addresses(q.Name, q.Qtype, addrs)), nil)
	}
	ips := sr.svc.clusterIPs
	switch q.Qtype {
	case dns.TypeA, dns.TypeAAAA:
		return r.found(r.addresses(q.Name, q.Qtype, ips), nil)
	case dns.TypeSRV:
		// CoreDNS's extension: the Service's name has an SRV record for every port.
		srv := newSRVSet()
		for _, p := range sr.svc.ports {
			srv.add(serviceName, p.port, netip.Addr{})
			for _, ip := range ips {
				srv.add(serviceName, p.port, ip)
			}
		}
		return r.found(srv.records(r, q.Name))
	}
	return r.nodata()
}

// externalName answers an ExternalName Service's name: a CNAME to the external name, followed
// within the zone here, and outside it by ServeDNS through the upstream servers.
func (r *resolver) externalName(q dns.Question, sr *serviceRecords, depth int) answer {
	target := dns.Fqdn(sr.svc.externalName)
	if _, ok := dns.IsDomainName(target); !ok || target == "." {
		return r.nxdomain()
	}
	if _, err := netip.ParseAddr(strings.TrimSuffix(target, ".")); err == nil {
		return r.nxdomain() // an address is no name to alias (CoreDNS answers nothing too)
	}
	cname := &dns.CNAME{Hdr: r.hdr(q.Name, dns.TypeCNAME, r.ttl), Target: target}
	if q.Qtype == dns.TypeCNAME || strings.EqualFold(target, dns.Fqdn(q.Name)) {
		return r.found([]dns.RR{cname}, nil)
	}
	if !r.inZone(strings.ToLower(target)) {
		a := r.found([]dns.RR{cname}, nil)
		a.follow = target
		return a
	}
	if depth >= maxChain {
		return r.found([]dns.RR{cname}, nil)
	}
	next := r.resolveChain(dns.Question{Name: target, Qtype: q.Qtype, Qclass: q.Qclass}, depth+1)
	a := r.found(append([]dns.RR{cname}, next.answer...), next.extra)
	a.follow = next.follow
	if next.rcode == dns.RcodeNameError {
		a.rcode = next.rcode // the rcode is the last name's (RFC 6604)
	}
	return a
}

// endpoint answers <endpoint>.<service>.<ns>.svc.<zone> for the Service's ready endpoints whose
// hostname (or dashed address) is host: of any Service but an ExternalName one, as CoreDNS.
func (r *resolver) endpoint(q dns.Question, sr *serviceRecords, host, serviceName string) answer {
	if sr.svc.kind == kindExternalName {
		return r.nxdomain()
	}
	var addrs []netip.Addr
	srv := newSRVSet()
	target := host + "." + serviceName
	sr.eachReady(func(slice *endpointSlice, ep *endpoint, ip netip.Addr) {
		if endpointHostname(ep, ip) != host {
			return
		}
		addrs = append(addrs, ip)
		for _, p := range slice.ports {
			srv.add(target, p.port, ip)
		}
	})
	switch {
	case len(addrs) == 0:
		return r.nxdomain()
	case q.Qtype == dns.TypeSRV:
		return r.found(srv.records(r, q.Name))
	}
	return r.found(r.addresses(q.Name, q.Qtype, addrs), nil)
}

// port answers _<port>._<proto>.<service>.<ns>.svc.<zone>: one SRV record pointing at the
// Service's name for a Service with a cluster IP; for a headless one, one for each ready
// endpoint of a slice with that port, pointing at the endpoint's name.
func (r *resolver) port(q dns.Question, sr *serviceRecords, port, proto, serviceName string) answer {
	if sr.svc.kind == kindExternalName || port == "" {
		return r.nxdomain()
	}
	srv := newSRVSet()
	if sr.svc.kind == kindHeadless {
		sr.eachReady(func(slice *endpointSlice, ep *endpoint, ip netip.Addr) {
			for _, p := range slice.ports {
				if p.matches(port, proto) {
					srv.add(endpointHostname(ep, ip)+"."+serviceName, p.port, ip)
				}
			}
		})
	} else {
		for _, p := range sr.svc.ports {
			if !p.matches(port, proto) {
				continue
			}
			srv.add(serviceName, p.port, netip.Addr{})
			for _, ip := range sr.svc.clusterIPs {
				srv.add(serviceName, p.port, ip)
			}
		}
	}
	if srv.empty() {
		return r.nxdomain()
	}
	if q.Qtype != dns.TypeSRV {
		return r.nodata()
	}
	return r.found(srv.records(r, q.Name))
}

// matches compares the port's name and protocol (TCP when unset) with a query's labels,
// without regard to case.
func (p servicePort) matches(port, proto string) bool {
	protocol := p.protocol
	if protocol == "" {
		protocol = v1.ProtocolTCP
	}
	return strings.EqualFold(p.name, port) && strings.EqualFold(string(protocol), proto)
}

// pod answers <a-b-c-d>.<ns>.pod.<zone> with the address it names (CoreDNS's "pods insecure",
// kube-dns's behaviour, which k3s configures), in a namespace that exists.
func (r *resolver) pod(q dns.Question, labels []string) answer {
	switch len(labels) {
	case 0:
		return r.nodata()
	case 1:
		if r.store.namespaceExists(labels[0]) {
			return r.nodata()
		}
		return r.nxdomain()
	case 2:
	default:
		return r.nxdomain()
	}
	if !r.store.namespaceExists(labels[1]) {
		return r.nxdomain()
	}
	ip, ok := podIP(labels[0])
	if !ok {
		return r.nxdomain()
	}
	return r.found(r.addresses(q.Name, q.Qtype, []netip.Addr{ip}), nil)
}

// podIP reads a pod name's address: 10-244-1-5 is 10.244.1.5, fd00--5 is fd00::5.
func podIP(label string) (netip.Addr, bool) {
	s := strings.ReplaceAll(label, "-", ":")
	if strings.Count(label, "-") == 3 && !strings.Contains(label, "--") {
		s = strings.ReplaceAll(label, "-", ".")
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip, true
}

// ptr answers the reverse name of ip: the Service's name for a cluster IP; for an endpoint's
// address, the endpoint's name under each Service that has it.
func (r *resolver) ptr(qname string, ip netip.Addr) []dns.RR {
	srs := r.store.byIP(ip)
	for _, sr := range srs {
		if slices.Contains(sr.svc.clusterIPs, ip) {
			return []dns.RR{r.ptrRecord(qname, sr.svc.name+"."+sr.svc.namespace+".svc."+r.zone)}
		}
	}
	var out []dns.RR
	seen := map[string]bool{}
	for _, sr := range srs {
		sr.eachReady(func(_ *endpointSlice, ep *endpoint, a netip.Addr) {
			if a != ip {
				return
			}
			target := endpointHostname(ep, a) + "." + sr.svc.name + "." + sr.svc.namespace + ".svc." + r.zone
			if !seen[target] {
				seen[target] = true
				out = append(out, r.ptrRecord(qname, target))
			}
		})
	}
	return out
}

func (r *resolver) ptrRecord(qname, target string) dns.RR {
	return &dns.PTR{Hdr: r.hdr(qname, dns.TypePTR, r.ttl), Ptr: target}
}

// parseReverse reads the address of a full in-addr.arpa or ip6.arpa name.
func parseReverse(name string) (netip.Addr, bool) {
	switch {
	case strings.HasSuffix(name, ".in-addr.arpa."):
		labels := dns.SplitDomainName(strings.TrimSuffix(name, ".in-addr.arpa."))
		if len(labels) != 4 {
			return netip.Addr{}, false
		}
		ip, err := netip.ParseAddr(labels[3] + "." + labels[2] + "." + labels[1] + "." + labels[0])
		return ip, err == nil
	case strings.HasSuffix(name, ".ip6.arpa."):
		labels := dns.SplitDomainName(strings.TrimSuffix(name, ".ip6.arpa."))
		if len(labels) != 32 {
			return netip.Addr{}, false
		}
		var b [16]byte
		for i, l := range labels {
			if len(l) != 1 {
				return netip.Addr{}, false
			}
			v := strings.IndexByte("0123456789abcdef", l[0])
			if v < 0 {
				return netip.Addr{}, false
			}
			// labels[0] is the lowest nibble of the last byte.
			pos := 31 - i
			if pos%2 == 0 {
				b[pos/2] |= byte(v) << 4
			} else {
				b[pos/2] |= byte(v)
			}
		}
		return netip.AddrFrom16(b), true
	}
	return netip.Addr{}, false
}

func (r *resolver) hdr(name string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

// addresses are the A (qtype A) or AAAA (qtype AAAA) records of ips at name, without
// duplicates; none for other types.
func (r *resolver) addresses(name string, qtype uint16, ips []netip.Addr) []dns.RR {
	var out []dns.RR
	for i, ip := range ips {
		dup := false
		for _, prev := range ips[:i] {
			if prev == ip {
				dup = true
				break
			}
		}
		if !dup {
			if rr := r.address(name, qtype, ip); rr != nil {
				out = append(out, rr)
			}
		}
	}
	return out
}

// address is ip's record at name when its family is qtype's, else nil.
func (r *resolver) address(name string, qtype uint16, ip netip.Addr) dns.RR {
	switch {
	case qtype == dns.TypeA && ip.Is4():
		return &dns.A{Hdr: r.hdr(name, dns.TypeA, r.ttl), A: ip.AsSlice()}
	case qtype == dns.TypeAAAA && ip.Is6():
		return &dns.AAAA{Hdr: r.hdr(name, dns.TypeAAAA, r.ttl), AAAA: ip.AsSlice()}
	}
	return nil
}

// shuffled reorders a name's several addresses at random, as CoreDNS's loadbalance plugin
// (which k3s's and kubeadm's configurations load) does, so that clients that take the first
// spread over the endpoints.
func (r *resolver) shuffled(rrs []dns.RR) []dns.RR {
	if len(rrs) > 1 {
		rand.Shuffle(len(rrs), func(i, j int) { rrs[i], rrs[j] = rrs[j], rrs[i] })
	}
	return rrs
}

// srvSet gathers SRV records, each (target, port) once, and the addresses of their targets for
// the additional section, each (target, address) once.
type srvSet struct {
	srvs  []srvEntry
	addrs []srvAddr
}

type srvEntry struct {
	target string
	port   int32
}

type srvAddr struct {
	target string
	ip     netip.Addr
}

func newSRVSet() *srvSet { return &srvSet{} }

func (s *srvSet) empty() bool { return len(s.srvs) == 0 }

// add records target:port, and ip as target's address when valid.
func (s *srvSet) add(target string, port int32, ip netip.Addr) {
	e := srvEntry{target, port}
	found := false
	for _, have := range s.srvs {
		if have == e {
			found = true
			break
		}
	}
	if !found {
		s.srvs = append(s.srvs, e)
	}
	if !ip.IsValid() {
		return
	}
	a := srvAddr{target, ip}
	for _, have := range s.addrs {
		if have == a {
			return
		}
	}
	s.addrs = append(s.addrs, a)
}

// records are the SRV records at qname, of priority 0 and equal weights summing to about 100
// (CoreDNS's), and their targets' addresses.
func (s *srvSet) records(r *resolver, qname string) (answer, extra []dns.RR) {
	weight := uint16(max(1, 100/max(1, len(s.srvs))))
	for _, e := range s.srvs {
		answer = append(answer, &dns.SRV{
			Hdr:      r.hdr(qname, dns.TypeSRV, r.ttl),
			Priority: 0,
			Weight:   weight,
			Port:     uint16(e.port),
			Target:   e.target,
		})
	}
	for _, a := range s.addrs {
		t := dns.TypeA
		if a.ip.Is6() {
			t = dns.TypeAAAA
		}
		extra = append(extra, r.address(a.target, t, a.ip))
	}
	return answer, extra
}
