// Package dns is the cluster DNS: the server that a ClusterFirst pod's resolv.conf points at
// (the kubelet writes the DNS Service's cluster IP, kube-system/kube-dns 10.96.0.10, as its
// nameserver, and the service proxy DNATs that address to where this server listens on the
// host). It answers what CoreDNS's kubernetes plugin answers in the configuration kubeadm and
// k3s deploy, following Kubernetes' DNS specification (schema 1.1.0):
//
//	<svc>.<ns>.svc.<zone>               A/AAAA: the cluster IPs; headless: the ready endpoints;
//	                                    ExternalName: a CNAME, followed through the upstreams
//	<host>.<svc>.<ns>.svc.<zone>        A/AAAA of an endpoint by hostname, or by its dashed
//	                                    address (10-244-1-5) when it has none
//	_<port>._<proto>.<svc>.<ns>.svc.<zone>  SRV, with the targets' addresses as additionals
//	<a-b-c-d>.<ns>.pod.<zone>           the address it names ("pods insecure", as k3s)
//	<reversed IP>.in-addr.arpa, ip6.arpa  PTR for cluster IPs and endpoint addresses
//	dns-version.<zone>                  TXT "1.1.0"
//
// with NXDOMAIN for names of the zone that do not exist and NODATA for names that do but lack
// the type asked. Everything else goes to the upstream servers (the node's resolv.conf).
//
// The layout: store.go is berth's own records, fed by informers (server.go); resolve.go the
// pure resolver that decides an answer from them; serve.go turns that into a message
// (EDNS0, truncation, forwarding, panics); forward.go talks to the upstreams; kubedns.go
// keeps the kube-dns Service and its EndpointSlice that point at the server.
//
// Why github.com/miekg/dns rather than CoreDNS as a library: miekg/dns is the DNS library the
// ecosystem runs (CoreDNS, and the kube-dns it replaced, are built on it), so the wire format,
// EDNS0, truncation and the UDP and TCP servers are the well-trodden ones. CoreDNS would bring
// its plugin chain, Caddy's configuration and its own informers and client. Berth's records
// are its own: the informers' transforms turn each object into the few fields DNS answers
// from, addresses parsed once, so the informers' caches hold those and nothing else, with one
// index by name and one by IP. BenchmarkQueries measures about 1.4 kB a Service (a Service
// with a three-endpoint EndpointSlice: caches, indexes and all) where the same objects as a
// client decodes them take 5.1 kB, and about 78,000 queries a second over UDP on loopback,
// clients and server sharing two cores.
package dns
