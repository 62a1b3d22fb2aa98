package dns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The cluster DNS's Service, as kubeadm and k3s name it (kubectl cluster-info and many tools
// look it up by these names).
const (
	ServiceNamespace = metav1.NamespaceSystem
	ServiceName      = "kube-dns"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the EndpointSlices that
	// EnsureService writes; the EndpointSlice controller leaves slices of other managers alone.
	ManagedBy = "dns.berth.dev"
	// keepInterval is how often KeepService checks the Service and its slices.
	keepInterval = time.Minute
)

// Service is the cluster DNS's Service as kubeadm's CoreDNS add-on has it (labels, ports
// dns 53/UDP, dns-tcp 53/TCP and metrics 9153/TCP), at clusterIP, without a selector: its
// endpoints are where berth's DNS server listens on the hosts, written by EnsureService.
func Service(clusterIP string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ServiceNamespace,
			Name:      ServiceName,
			Labels: map[string]string{
				"k8s-app":                       "kube-dns",
				"kubernetes.io/cluster-service": "true",
				"kubernetes.io/name":            "CoreDNS",
			},
		},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: clusterIP,
			Ports: []v1.ServicePort{
				{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: 9153, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
			},
		},
	}
}

// EndpointSlices are the Service's EndpointSlices for the addresses the server listens on
// ("10.0.0.5:53", or an address alone for port 53): one per address family, every endpoint
// ready, with the dns and dns-tcp ports. The metrics port has no endpoints: berth's DNS
// metrics are served with berth's others.
func EndpointSlices(endpoints []string) ([]*discoveryv1.EndpointSlice, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("the cluster DNS needs at least one endpoint")
	}
	port := ""
	byFamily := map[discoveryv1.AddressType][]string{}
	for _, e := range endpoints {
		host, p := e, "53"
		if h, hp, err := net.SplitHostPort(e); err == nil {
			host, p = h, hp
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.IsUnspecified() || ip.Zone() != "" {
			return nil, fmt.Errorf("the DNS endpoint %q is not an address a pod can reach", e)
		}
		if port != "" && p != port {
			return nil, fmt.Errorf("the DNS endpoints listen on different ports (%s, %s): one Service port cannot reach both", port, p)
		}
		port = p
		family := discoveryv1.AddressTypeIPv4
		if ip.Unmap().Is6() {
			family = discoveryv1.AddressTypeIPv6
		}
		byFamily[family] = append(byFamily[family], ip.Unmap().String())
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("the DNS endpoints' port %q is not a port", port)
	}
	var out []*discoveryv1.EndpointSlice
	for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		addrs := byFamily[family]
		if len(addrs) == 0 {
			continue
		}
		slices.Sort(addrs)
		addrs = slices.Compact(addrs)
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ServiceNamespace,
				Name:      sliceName(family),
				Labels: map[string]string{
					discoveryv1.LabelServiceName: ServiceName,
					discoveryv1.LabelManagedBy:   ManagedBy,
				},
			},
			AddressType: family,
			Ports: []discoveryv1.EndpointPort{
				{Name: ptr.To("dns"), Protocol: ptr.To(v1.ProtocolUDP), Port: ptr.To(int32(n))},
				{Name: ptr.To("dns-tcp"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To(int32(n))},
			},
		}
		for _, a := range addrs {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{a},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			})
		}
		out = append(out, slice)
	}
	return out, nil
}

func sliceName(family discoveryv1.AddressType) string {
	if family == discoveryv1.AddressTypeIPv6 {
		return ServiceName + "-berth-ipv6"
	}
	return ServiceName + "-berth-ipv4"
}

// EnsureService makes the cluster's DNS Service (Service, at clusterIP, DefaultClusterIP when
// empty) and its EndpointSlices (EndpointSlices(endpoints)) exist as they should: it creates
// kube-system if missing, creates or corrects the Service's labels and ports, and creates,
// updates or deletes the slices it manages. A kube-dns Service with a selector belongs to
// another DNS (CoreDNS pods): EnsureService then changes nothing and says so.
func EnsureService(ctx context.Context, client kubernetes.Interface, clusterIP string, endpoints []string) error {
	if clusterIP == "" {
		clusterIP = DefaultClusterIP
	}
	wantSlices, err := EndpointSlices(endpoints)
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, client); err != nil {
		return err
	}
	if err := ensureService(ctx, client, Service(clusterIP)); err != nil {
		return err
	}
	return ensureSlices(ctx, client, wantSlices)
}

func ensureNamespace(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.CoreV1().Namespaces().Get(ctx, ServiceNamespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ServiceNamespace}}
		if _, err = client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("ensuring namespace %s: %w", ServiceNamespace, err)
	}
	return nil
}

func ensureService(ctx context.Context, client kubernetes.Interface, want *v1.Service) error {
	services := client.CoreV1().Services(ServiceNamespace)
	have, err := services.Get(ctx, ServiceName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err = services.Create(ctx, want, metav1.CreateOptions{}); err == nil {
			klog.FromContext(ctx).Info("Created the cluster DNS Service", "service", klog.KObj(want), "clusterIP", want.Spec.ClusterIP)
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("ensuring service %s/%s: %w", ServiceNamespace, ServiceName, err)
	}
	if len(have.Spec.Selector) > 0 {
		return fmt.Errorf("service %s/%s selects pods %v: another cluster DNS serves it, berth leaves it alone", ServiceNamespace, ServiceName, have.Spec.Selector)
	}
	if have.Spec.ClusterIP != want.Spec.ClusterIP {
		// The cluster IP cannot change; the kubelets' clusterDNS must name the Service's.
		return fmt.Errorf("service %s/%s has cluster IP %s, not %s: the kubelets' clusterDNS must name the one it has", ServiceNamespace, ServiceName, have.Spec.ClusterIP, want.Spec.ClusterIP)
	}
	labelsOK := true
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			labelsOK = false
		}
	}
	if labelsOK && portsEqual(have.Spec.Ports, want.Spec.Ports) {
		return nil
	}
	update := have.DeepCopy()
	if update.Labels == nil {
		update.Labels = map[string]string{}
	}
	maps.Copy(update.Labels, want.Labels)
	update.Spec.Ports = want.Spec.Ports
	if _, err := services.Update(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating service %s/%s: %w", ServiceNamespace, ServiceName, err)
	}
	klog.FromContext(ctx).Info("Corrected the cluster DNS Service's labels and ports", "service", klog.KObj(want))
	return nil
}

func portsEqual(a, b []v1.ServicePort) bool {
	return slices.EqualFunc(a, b, func(x, y v1.ServicePort) bool {
		return x.Name == y.Name && x.Port == y.Port && x.Protocol == y.Protocol && x.TargetPort == y.TargetPort
	})
}

func ensureSlices(ctx context.Context, client kubernetes.Interface, want []*discoveryv1.EndpointSlice) error {
	api := client.DiscoveryV1().EndpointSlices(ServiceNamespace)
	list, err := api.List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + ServiceName + "," + discoveryv1.LabelManagedBy + "=" + ManagedBy,
	})
	if err != nil {
		return fmt.Errorf("listing the cluster DNS's endpoint slices: %w", err)
	}
	have := map[string]*discoveryv1.EndpointSlice{}
	for i := range list.Items {
		have[list.Items[i].Name] = &list.Items[i]
	}
	var errs []error
	for _, w := range want {
		h, ok := have[w.Name]
		delete(have, w.Name)
		switch {
		case !ok:
			if _, err := api.Create(ctx, w, metav1.CreateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("creating endpoint slice %s: %w", w.Name, err))
			}
		case h.AddressType != w.AddressType:
			// The address type cannot change: replace the slice.
			if err := api.Delete(ctx, h.Name, metav1.DeleteOptions{}); err != nil {
				errs = append(errs, err)
			} else if _, err := api.Create(ctx, w, metav1.CreateOptions{}); err != nil {
				errs = append(errs, err)
			}
		case !sliceEqual(h, w):
			update := h.DeepCopy()
			update.Labels = w.Labels
			update.Endpoints = w.Endpoints
			update.Ports = w.Ports
			if _, err := api.Update(ctx, update, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("updating endpoint slice %s: %w", w.Name, err))
			}
		}
	}
	for name := range have {
		if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting endpoint slice %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func sliceEqual(a, b *discoveryv1.EndpointSlice) bool {
	if !maps.Equal(a.Labels, b.Labels) || len(a.Ports) != len(b.Ports) || len(a.Endpoints) != len(b.Endpoints) {
		return false
	}
	for i := range a.Ports {
		x, y := a.Ports[i], b.Ports[i]
		if ptr.Deref(x.Name, "") != ptr.Deref(y.Name, "") || ptr.Deref(x.Port, 0) != ptr.Deref(y.Port, 0) ||
			ptr.Deref(x.Protocol, v1.ProtocolTCP) != ptr.Deref(y.Protocol, v1.ProtocolTCP) {
			return false
		}
	}
	for i := range a.Endpoints {
		x, y := a.Endpoints[i], b.Endpoints[i]
		if !slices.Equal(x.Addresses, y.Addresses) || !ptr.Deref(x.Conditions.Ready, true) {
			return false
		}
	}
	return true
}

// KeepService runs EnsureService at once and then every minute until ctx ends, so that a
// deleted or edited kube-dns Service or slice comes back; a failure is logged and tried again
// after a back-off of one second doubling to the minute.
func KeepService(ctx context.Context, client kubernetes.Interface, clusterIP string, endpoints []string) {
	logger := klog.FromContext(ctx).WithValues("component", component)
	backoff := time.Second
	for {
		wait := keepInterval
		err := panics.Call(ctx, component, func() error { return EnsureService(ctx, client, clusterIP, endpoints) })
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "Could not ensure the cluster DNS Service", "retryAfter", backoff)
			wait, backoff = backoff, min(2*backoff, keepInterval)
		} else {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
