package dns

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tolerateUnreadyAnnotation is the specification's older way to publish not-ready endpoints
// (Service.spec.publishNotReadyAddresses is the current one).
const tolerateUnreadyAnnotation = "service.alpha.kubernetes.io/tolerate-unready-endpoints"

// store is berth's own records: what the informers saw of Services, EndpointSlices and
// Namespaces, as the few fields DNS answers from (service, endpointSlice: the informers'
// transforms make them, so the informers' caches hold these and not the API objects), indexed
// by namespace and name, and by IP for PTR.
//
// Writers are the informers' event handlers; readers are queries. A serviceRecords is never
// changed once stored: a change stores a new one, so that a query takes one under the read
// lock and answers from it without holding the lock.
type store struct {
	mu         sync.RWMutex
	namespaces map[string]*namespaceRecords
	// reverse maps every cluster IP, and every ready endpoint address, to the Service that
	// has it (its meta: the key), and reverseMore an address of more than one Service to the
	// others: nearly every address is one Service's, and one pointer a map slot is a third
	// of what a set would take.
	reverse     map[addrKey]*meta
	reverseMore map[addrKey][]*meta
	// serial is the SOA serial: the Unix time of the last change.
	serial atomic.Uint32
}

type namespaceRecords struct {
	// exists: the Namespace object exists (its name.svc.zone is then NODATA, not NXDOMAIN).
	exists   bool
	services map[string]*serviceRecords
}

// serviceRecords is a Service and its EndpointSlices. svc is nil while slices name a Service
// the informer has not delivered (or that is gone): such a name does not exist.
type serviceRecords struct {
	svc    *service
	slices []*endpointSlice // sorted by name
}

type serviceKey struct{ namespace, name string }

// addrKey is an address as the reverse index keys it: 16 bytes, no pointer for the collector
// to follow (addresses are unmapped, so an IPv4 address has one key).
type addrKey [16]byte

func newStore() *store {
	return &store{
		namespaces:  map[string]*namespaceRecords{},
		reverse:     map[addrKey]*meta{},
		reverseMore: map[addrKey][]*meta{},
	}
}

// lookup is the records of namespace/name (nil when there are none).
func (st *store) lookup(namespace, name string) *serviceRecords {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if nr := st.namespaces[namespace]; nr != nil {
		return nr.services[name]
	}
	return nil
}

// namespaceExists says whether the Namespace object exists.
func (st *store) namespaceExists(namespace string) bool {
	st.mu.RLock()
	defer st.mu.RUnlock()
	nr := st.namespaces[namespace]
	return nr != nil && nr.exists
}

// byIP is the records of the services that have ip as a cluster IP or a ready endpoint.
func (st *store) byIP(ip netip.Addr) []*serviceRecords {
	st.mu.RLock()
	defer st.mu.RUnlock()
	k := ip.As16()
	first, ok := st.reverse[k]
	if !ok {
		return nil
	}
	var out []*serviceRecords
	for _, m := range append([]*meta{first}, st.reverseMore[k]...) {
		if sr := st.namespaces[m.namespace].services[m.name]; sr != nil {
			out = append(out, sr)
		}
	}
	return out
}

func (st *store) setNamespace(name string, exists bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	nr := st.namespaces[name]
	if nr == nil {
		if !exists {
			return
		}
		nr = &namespaceRecords{services: map[string]*serviceRecords{}}
		st.namespaces[name] = nr
	}
	nr.exists = exists
	if !exists && len(nr.services) == 0 {
		delete(st.namespaces, name)
	}
	st.touch()
}

// setService stores svc (nil: the Service namespace/name is gone).
func (st *store) setService(namespace, name string, svc *service) {
	st.update(namespace, name, func(old *serviceRecords) *serviceRecords {
		out := &serviceRecords{svc: svc}
		if old != nil {
			out.slices = old.slices
		}
		return out
	})
}

// setSlice stores slice under the Service its kubernetes.io/service-name label names (nil:
// the slice sliceName of that Service is gone).
func (st *store) setSlice(namespace, service, sliceName string, slice *endpointSlice) {
	if service == "" {
		return
	}
	st.update(namespace, service, func(old *serviceRecords) *serviceRecords {
		out := &serviceRecords{}
		if old != nil {
			out.svc = old.svc
			out.slices = slices.Clone(old.slices)
		}
		i, found := slices.BinarySearchFunc(out.slices, sliceName, func(s *endpointSlice, name string) int {
			return strings.Compare(s.name, name)
		})
		switch {
		case slice == nil && found:
			out.slices = slices.Delete(out.slices, i, i+1)
		case slice != nil && found:
			out.slices[i] = slice
		case slice != nil:
			out.slices = slices.Insert(out.slices, i, slice)
		}
		return out
	})
}

// update replaces the records of namespace/name by change(old) and keeps the reverse index
// in step.
func (st *store) update(namespace, name string, change func(old *serviceRecords) *serviceRecords) {
	st.mu.Lock()
	defer st.mu.Unlock()
	nr := st.namespaces[namespace]
	if nr == nil {
		nr = &namespaceRecords{services: map[string]*serviceRecords{}}
		st.namespaces[namespace] = nr
	}
	old := nr.services[name]
	sr := change(old)
	if old != nil {
		for _, ip := range old.addresses() {
			st.unindex(ip, &old.svc.meta)
		}
	}
	if sr.svc == nil && len(sr.slices) == 0 {
		delete(nr.services, name)
		if !nr.exists && len(nr.services) == 0 {
			delete(st.namespaces, namespace)
		}
	} else {
		nr.services[name] = sr
		for _, ip := range sr.addresses() {
			st.index(ip, &sr.svc.meta)
		}
	}
	st.touch()
}

func (st *store) index(ip netip.Addr, m *meta) {
	k := ip.As16()
	if _, ok := st.reverse[k]; !ok {
		st.reverse[k] = m
		return
	}
	st.reverseMore[k] = append(st.reverseMore[k], m)
}

func (st *store) unindex(ip netip.Addr, m *meta) {
	k := ip.As16()
	first, ok := st.reverse[k]
	if !ok {
		return
	}
	more := st.reverseMore[k]
	if first == m {
		if len(more) == 0 {
			delete(st.reverse, k)
			return
		}
		st.reverse[k], more = more[0], more[1:]
	} else {
		more = slices.DeleteFunc(slices.Clone(more), func(o *meta) bool { return o == m })
	}
	if len(more) == 0 {
		delete(st.reverseMore, k)
	} else {
		st.reverseMore[k] = more
	}
}

func (st *store) touch() { st.serial.Store(uint32(time.Now().Unix())) }

// addresses are the distinct IPs that PTR answers for: the cluster IPs and the ready
// endpoints' addresses (CoreDNS answers PTR for the endpoints of every Service, not only of
// headless ones as the specification requires).
func (sr *serviceRecords) addresses() []netip.Addr {
	if sr.svc == nil {
		return nil
	}
	out := slices.Clone(sr.svc.clusterIPs)
	sr.eachReady(func(_ *endpointSlice, _ *endpoint, ip netip.Addr) {
		out = append(out, ip)
	})
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// eachReady calls fn for every address of every ready endpoint, in a stable order (slices by
// name). An endpoint of unknown readiness (ready unset) is ready, as the EndpointSlice API says
// consumers should take it; a Service that publishes not-ready addresses has all of them.
func (sr *serviceRecords) eachReady(fn func(slice *endpointSlice, ep *endpoint, ip netip.Addr)) {
	if sr.svc == nil {
		return
	}
	for _, slice := range sr.slices {
		for i := range slice.endpoints {
			ep := &slice.endpoints[i]
			if !ep.ready && !sr.svc.publishNotReady {
				continue
			}
			for _, ip := range ep.addresses {
				fn(slice, ep, ip)
			}
		}
	}
}

// meta is what an informer's cache needs of an object: its key and resource version
// (meta.Accessor finds them through GetObjectMeta).
type meta struct{ namespace, name, resourceVersion string }

func (m *meta) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: m.namespace, Name: m.name, ResourceVersion: m.resourceVersion}
}

type serviceKind uint8

const (
	kindClusterIP serviceKind = iota
	kindHeadless
	kindExternalName
)

// service is what the records keep of a Service.
type service struct {
	meta
	kind            serviceKind
	publishNotReady bool         // spec.publishNotReadyAddresses, or the older annotation
	clusterIPs      []netip.Addr // kindClusterIP only
	externalName    string       // kindExternalName only
	ports           []servicePort
}

type servicePort struct {
	name     string
	protocol v1.Protocol
	port     int32
}

// endpointSlice is what the records keep of an EndpointSlice: the endpoints with an IP
// address (FQDN slices have none).
type endpointSlice struct {
	meta
	service   string // its kubernetes.io/service-name label
	ports     []servicePort
	endpoints []endpoint
}

type endpoint struct {
	addresses []netip.Addr
	hostname  string // lower case; "" for none
	ready     bool
}

// namespace is what the records keep of a Namespace: that it exists.
type namespace struct{ meta }

// stripService is the Services informer's transform.
func stripService(obj any) (any, error) {
	svc, ok := obj.(*v1.Service)
	if !ok {
		return obj, nil
	}
	out := &service{
		meta:            meta{namespace: svc.Namespace, name: svc.Name, resourceVersion: svc.ResourceVersion},
		publishNotReady: svc.Spec.PublishNotReadyAddresses || svc.Annotations[tolerateUnreadyAnnotation] == "true",
	}
	switch {
	case svc.Spec.Type == v1.ServiceTypeExternalName:
		out.kind, out.externalName = kindExternalName, svc.Spec.ExternalName
	case svc.Spec.ClusterIP == v1.ClusterIPNone:
		out.kind = kindHeadless
	default:
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		for _, s := range ips {
			if ip, err := netip.ParseAddr(s); err == nil {
				out.clusterIPs = append(out.clusterIPs, ip.Unmap())
			}
		}
	}
	if len(svc.Spec.Ports) > 0 {
		out.ports = make([]servicePort, len(svc.Spec.Ports))
		for i, p := range svc.Spec.Ports {
			out.ports[i] = servicePort{name: p.Name, protocol: p.Protocol, port: p.Port}
		}
	}
	return out, nil
}

// stripSlice is the EndpointSlices informer's transform.
func stripSlice(obj any) (any, error) {
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &endpointSlice{
		meta:    meta{namespace: slice.Namespace, name: slice.Name, resourceVersion: slice.ResourceVersion},
		service: slice.Labels[discoveryv1.LabelServiceName],
	}
	if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
		return out, nil
	}
	for _, p := range slice.Ports {
		if p.Port == nil {
			continue // a slice of no ports: its endpoints' addresses still answer A/AAAA
		}
		sp := servicePort{port: *p.Port, protocol: v1.ProtocolTCP}
		if p.Name != nil {
			sp.name = *p.Name
		}
		if p.Protocol != nil {
			sp.protocol = *p.Protocol
		}
		out.ports = append(out.ports, sp)
	}
	out.endpoints = make([]endpoint, 0, len(slice.Endpoints))
	for _, ep := range slice.Endpoints {
		e := endpoint{ready: ep.Conditions.Ready == nil || *ep.Conditions.Ready}
		if ep.Hostname != nil {
			e.hostname = strings.ToLower(*ep.Hostname)
		}
		for _, a := range ep.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				e.addresses = append(e.addresses, ip.Unmap())
			}
		}
		if len(e.addresses) > 0 {
			out.endpoints = append(out.endpoints, e)
		}
	}
	return out, nil
}

// stripNamespace is the Namespaces informer's transform.
func stripNamespace(obj any) (any, error) {
	ns, ok := obj.(*v1.Namespace)
	if !ok {
		return obj, nil
	}
	return &namespace{meta{name: ns.Name, resourceVersion: ns.ResourceVersion}}, nil
}

// endpointHostname is the label an endpoint address is known by under its Service: the
// endpoint's hostname, else the address with dashes (CoreDNS's default, endpoint_pod_names
// off): 10.244.1.5 is 10-244-1-5, fd00::5 is fd00--5.
func endpointHostname(ep *endpoint, ip netip.Addr) string {
	if ep.hostname != "" {
		return ep.hostname
	}
	return dashed(ip)
}

func dashed(ip netip.Addr) string {
	if ip.Is4() {
		return strings.ReplaceAll(ip.String(), ".", "-")
	}
	s := strings.ReplaceAll(ip.String(), ":", "-")
	if strings.HasSuffix(s, "-") {
		s += "0"
	}
	return s
}
