package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/kubernetes"

	"github.com/berth-cluster/berth/pkg/apiserver/kubernetesservice"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/service"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/service/ipallocator"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/service/portallocator"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Resources kept in etcd without being served: the node-port bitmap and the API servers'
// endpoint leases (kube-apiserver's names; they sit outside the watch cache).
var (
	nodePortAllocations = corev1.Resource("servicenodeportallocations")
	apiServerLeases     = corev1.Resource("apiServerIPInfo")
)

// serviceNetwork is the API server's share of Services: the ranges, and what the service
// registry allocates from.
type serviceNetwork struct {
	cidrs    []netip.Prefix
	ports    utilnet.PortRange
	ipAlloc  *ipallocator.Allocator
	nodePort *portallocator.Allocator
	// leases is the raw storage of the endpoint leases; destroy closes both raw storages.
	leases  storage.Interface
	destroy []factory.DestroyFunc
}

// parseServiceRanges parses --service-cluster-ip-range and --service-node-port-range.
func parseServiceRanges(c Config) ([]netip.Prefix, utilnet.PortRange, error) {
	ipRange := c.ServiceClusterIPRange
	if ipRange == "" {
		ipRange = DefaultServiceClusterIPRange
	}
	var cidrs []netip.Prefix
	for _, s := range strings.Split(ipRange, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, utilnet.PortRange{}, fmt.Errorf("--service-cluster-ip-range %q: %w", ipRange, err)
		}
		if p.Addr().Is4() && p.Bits() > 30 {
			return nil, utilnet.PortRange{}, fmt.Errorf("--service-cluster-ip-range %q: %s holds no address for a Service", ipRange, p)
		}
		cidrs = append(cidrs, p.Masked())
	}
	if len(cidrs) > 2 || (len(cidrs) == 2 && cidrs[0].Addr().Is4() == cidrs[1].Addr().Is4()) {
		return nil, utilnet.PortRange{}, fmt.Errorf("--service-cluster-ip-range %q: want one CIDR, or two of different IP families", ipRange)
	}
	portRange := c.ServiceNodePortRange
	if portRange == "" {
		portRange = DefaultServiceNodePortRange
	}
	ports, err := portallocator.ParseRange(portRange)
	if err != nil {
		return nil, utilnet.PortRange{}, err
	}
	return cidrs, ports, nil
}

// KubernetesServiceIPs are the kubernetes Service's cluster IPs for --service-cluster-ip-range
// ranges ("" its default), one per range: what the serving certificate must cover.
func KubernetesServiceIPs(ranges string) ([]net.IP, error) {
	cidrs, _, err := parseServiceRanges(Config{ServiceClusterIPRange: ranges})
	if err != nil {
		return nil, err
	}
	ips := make([]net.IP, 0, len(cidrs))
	for _, cidr := range cidrs {
		ips = append(ips, net.IP(kubernetesservice.ServiceIP(cidr).AsSlice()))
	}
	return ips, nil
}

// rawStorage is the etcd storage of a resource that is not served, under prefix.
func rawStorage(getter generic.RESTOptionsGetter, gr schema.GroupResource, prefix string, newFunc, newList func() runtime.Object) (storage.Interface, factory.DestroyFunc, error) {
	opts, err := getter.GetRESTOptions(gr, newFunc())
	if err != nil {
		return nil, nil, err
	}
	s, destroy, err := opts.Decorator(opts.StorageConfig, prefix, nil, newFunc, newList, nil, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("storage of %s: %w", gr, err)
	}
	return s, destroy, nil
}

// newServiceNetwork builds the allocators over the IPAddress and ServiceCIDR stores.
func newServiceNetwork(c Config, getter generic.RESTOptionsGetter, ipAddresses, serviceCIDRs *genericregistry.Store) (*serviceNetwork, error) {
	cidrs, ports, err := parseServiceRanges(c)
	if err != nil {
		return nil, err
	}
	n := &serviceNetwork{cidrs: cidrs, ports: ports}
	bitmap, destroy, err := rawStorage(getter, nodePortAllocations, "/ranges",
		func() runtime.Object { return &corev1.RangeAllocation{} }, func() runtime.Object { return &corev1.List{} })
	if err != nil {
		return nil, err
	}
	n.destroy = append(n.destroy, destroy)
	n.nodePort = portallocator.New(ports, bitmap)
	n.leases, destroy, err = rawStorage(getter, apiServerLeases, "/masterleases",
		func() runtime.Object { return &corev1.Endpoints{} }, func() runtime.Object { return &corev1.EndpointsList{} })
	if err != nil {
		n.close()
		return nil, err
	}
	n.destroy = append(n.destroy, destroy)
	n.ipAlloc, err = ipallocator.New(cidrs, ipAddressStore{ipAddresses}, serviceCIDRSource{serviceCIDRs})
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *serviceNetwork) close() {
	for _, d := range n.destroy {
		d()
	}
}

// ipAddressStore is the IPAddress store as the allocator uses it, in process.
type ipAddressStore struct{ store *genericregistry.Store }

func (s ipAddressStore) Create(ctx context.Context, ip *networkingv1.IPAddress) error {
	_, err := s.store.Create(ctx, ip, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	return err
}

func (s ipAddressStore) Delete(ctx context.Context, name string) error {
	_, _, err := s.store.Delete(ctx, name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (s ipAddressStore) List(ctx context.Context) ([]networkingv1.IPAddress, error) {
	obj, err := s.store.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*networkingv1.IPAddressList).Items, nil
}

// serviceCIDRSource lists the ServiceCIDRs IPs may come from: not being deleted.
type serviceCIDRSource struct{ store *genericregistry.Store }

func (s serviceCIDRSource) ServiceCIDRs(ctx context.Context) ([]netip.Prefix, error) {
	obj, err := s.store.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, sc := range obj.(*networkingv1.ServiceCIDRList).Items {
		if sc.DeletionTimestamp != nil {
			continue
		}
		for _, c := range sc.Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// repairer is the allocations' repair loop over the stores.
func (n *serviceNetwork) repairer(services *genericregistry.Store, ipAddresses *genericregistry.Store) *service.Repairer {
	return &service.Repairer{
		Services: func(ctx context.Context) ([]corev1.Service, error) {
			obj, err := services.List(ctx, &metainternalversion.ListOptions{})
			if err != nil {
				return nil, err
			}
			return obj.(*corev1.ServiceList).Items, nil
		},
		IPs: ipAddressStore{ipAddresses},
		Create: func(ctx context.Context, svc *corev1.Service, ip netip.Addr) error {
			err := n.ipAlloc.Allocate(ctx, svc, ip)
			if err == ipallocator.ErrAllocated {
				return nil
			}
			return err
		},
		Resync: n.ipAlloc.Resync,
		Ports:  n.nodePort,
	}
}

// endpoint is where this API server is reached: its advertised address and its port.
type endpoint struct {
	ip   net.IP
	port int
}

// publicIP is the address the kubernetes Service's endpoints carry: the advertised address
// when it is of the Service's family (the service proxy cannot translate an IPv4 cluster IP
// to an IPv6 endpoint; kube-apiserver refuses such an --advertise-address), else the
// machine's first global address of that family, else its loopback address.
func publicIP(ip net.IP, cidr netip.Prefix) net.IP {
	want4 := cidr.Addr().Is4()
	if ip != nil && !ip.IsUnspecified() && (ip.To4() != nil) == want4 {
		return ip
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && (n.IP.To4() != nil) == want4 {
				return n.IP
			}
		}
	}
	if want4 {
		return net.IPv4(127, 0, 0, 1)
	}
	return net.IPv6loopback
}

// installServiceHooks starts, once the server serves, the kubernetes Service's controller
// (through the loopback client) and the allocations' repair loop (in process). Both stop
// before the server does (a pre-shutdown hook, while the loopback client still works, so
// that this API server leaves the endpoints at once), and the raw storages close after them.
func installServiceHooks(gs *genericapiserver.GenericAPIServer, self endpoint, n *serviceNetwork, services, ipAddresses *genericregistry.Store) {
	var (
		mu     sync.Mutex
		cancel context.CancelFunc = func() {}
		wg     sync.WaitGroup
	)
	gs.AddPostStartHookOrDie("start-service-ip-repair-controllers", func(hc genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(hc.LoopbackClientConfig)
		if err != nil {
			return err
		}
		ctrl := kubernetesservice.New(client, n.leases, kubernetesservice.Config{
			PublicIP:     publicIP(self.ip, n.cidrs[0]),
			Port:         self.port,
			ServiceCIDRs: n.cidrs,
		})
		repair := n.repairer(services, ipAddresses)
		ctx, stop := context.WithCancel(hc)
		mu.Lock()
		cancel = stop
		mu.Unlock()
		wg.Go(func() { panics.Forever(ctx, "kubernetes-service", ctrl.Run) })
		wg.Go(func() {
			panics.Forever(ctx, "service-repair", func(ctx context.Context) { repair.Run(ctx, service.RepairInterval) })
		})
		return nil
	})
	gs.AddPreShutdownHookOrDie("stop-service-controllers", func() error {
		mu.Lock()
		cancel()
		mu.Unlock()
		wg.Wait()
		n.close()
		return nil
	})
}

// sliceLister lists a Service's EndpointSlices from the store (services/proxy).
func sliceLister(slices *genericregistry.Store) service.EndpointSlices {
	return func(ctx context.Context, ns, name string) ([]discoveryv1.EndpointSlice, error) {
		ctx = genericapirequest.WithNamespace(ctx, ns)
		obj, err := slices.List(ctx, &metainternalversion.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}),
		})
		if err != nil {
			return nil, err
		}
		return obj.(*discoveryv1.EndpointSliceList).Items, nil
	}
}
