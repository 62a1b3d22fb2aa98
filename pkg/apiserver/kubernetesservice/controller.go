// Package kubernetesservice keeps what lets a pod find the API server, as kube-apiserver's
// bootstrap controllers do: the default ServiceCIDR "kubernetes" (the
// --service-cluster-ip-range, Ready), the Service default/kubernetes (the range's first IP,
// port 443 "https" to the API server's port) and its Endpoints and EndpointSlice, which list
// every API server that is up.
//
// Each API server holds a lease in etcd, /masterleases/<its IP>, renewed every interval with
// a TTL of 1.5 intervals (kube-apiserver's "lease" endpoint reconciler): the endpoints are the
// IPs whose lease lives, so an API server that stops, or dies, leaves them within seconds.
// It runs as a post-start hook of the API server and writes through the loopback client.
package kubernetesservice

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Kubernetes' names.
const (
	ServiceName     = "kubernetes"
	ServiceCIDRName = "kubernetes"
	portName        = "https"
	servicePort     = 443
	leasePrefix     = "/masterleases/"
)

// Leases is the part of storage.Interface the lease reconciler uses, on the raw etcd storage
// (no watch cache: the keys expire).
type Leases interface {
	Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error
	GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
		preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error
	Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
		validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error
	GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error
}

// Config is what the controller keeps.
type Config struct {
	// PublicIP is this API server's address in the endpoints; Port its secure port.
	PublicIP net.IP
	Port     int
	// ServiceCIDRs are the --service-cluster-ip-range, the default family first; the
	// Service gets the first's first IP.
	ServiceCIDRs []netip.Prefix
	// Interval is how often everything is checked (kube-apiserver's 10 s).
	Interval time.Duration
}

// Controller keeps the kubernetes Service, its endpoints and the default ServiceCIDR.
type Controller struct {
	client kubernetes.Interface
	leases Leases
	cfg    Config
}

// New returns the controller.
func New(client kubernetes.Interface, leases Leases, cfg Config) *Controller {
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Second
	}
	return &Controller{client: client, leases: leases, cfg: cfg}
}

// ServiceIP is the kubernetes Service's cluster IP: the range's first address.
func ServiceIP(cidr netip.Prefix) netip.Addr { return cidr.Masked().Addr().Next() }

// Run keeps everything until ctx ends, then takes this API server out of the endpoints.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for _, step := range []struct {
			what string
			do   func(context.Context) error
		}{
			{"the default ServiceCIDR", c.ensureServiceCIDR},
			{"the kubernetes Service", c.ensureService},
			{"the kubernetes Service's endpoints", c.reconcileEndpoints},
		} {
			if err := step.do(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, "Keeping "+step.what+" failed; retrying", "interval", c.cfg.Interval)
			}
		}
	}, c.cfg.Interval)
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := c.removeEndpoint(stop); err != nil {
		logger.Error(err, "Removing this API server from the kubernetes Service's endpoints failed")
	}
}

func (c *Controller) ensureServiceCIDR(ctx context.Context) error {
	cidrs := make([]string, len(c.cfg.ServiceCIDRs))
	for i, p := range c.cfg.ServiceCIDRs {
		cidrs[i] = p.Masked().String()
	}
	api := c.client.NetworkingV1().ServiceCIDRs()
	sc, err := api.Get(ctx, ServiceCIDRName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sc, err = api.Create(ctx, &networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: ServiceCIDRName},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: cidrs},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	if !slices.Equal(sc.Spec.CIDRs, cidrs) {
		// As kube-apiserver: a changed flag does not rewrite the object (other API servers
		// may still run with the old one); say so.
		klog.FromContext(ctx).Info("The default ServiceCIDR differs from --service-cluster-ip-range", "stored", sc.Spec.CIDRs, "flag", cidrs)
		return nil
	}
	if cond := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady); cond != nil && cond.Status != metav1.ConditionUnknown {
		return nil
	}
	sc = sc.DeepCopy()
	apimeta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{
		Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
		Reason: "Ready", Message: "Kubernetes default Service CIDR is ready",
	})
	_, err = api.UpdateStatus(ctx, sc, metav1.UpdateOptions{})
	return err
}

// ensureService creates the kubernetes Service, and puts its ports and type back if changed.
func (c *Controller) ensureService(ctx context.Context) error {
	ports := []corev1.ServicePort{{Name: portName, Protocol: corev1.ProtocolTCP, Port: servicePort, TargetPort: intstr.FromInt32(int32(c.cfg.Port))}}
	api := c.client.CoreV1().Services(metav1.NamespaceDefault)
	svc, err := api.Get(ctx, ServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault,
				Labels: map[string]string{"provider": "kubernetes", "component": "apiserver"}},
			Spec: corev1.ServiceSpec{
				Ports:           ports,
				ClusterIP:       ServiceIP(c.cfg.ServiceCIDRs[0]).String(),
				IPFamilyPolicy:  ptr.To(corev1.IPFamilyPolicySingleStack),
				SessionAffinity: corev1.ServiceAffinityNone,
				Type:            corev1.ServiceTypeClusterIP,
			},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // another API server was first; the next round checks it
		}
		return err
	case err != nil:
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0] == ports[0] {
		return nil
	}
	svc = svc.DeepCopy()
	svc.Spec.Type, svc.Spec.Ports = corev1.ServiceTypeClusterIP, ports
	klog.FromContext(ctx).Info("Resetting the kubernetes Service's ports", "ports", ports)
	_, err = api.Update(ctx, svc, metav1.UpdateOptions{})
	return err
}

// reconcileEndpoints renews this API server's lease and writes the endpoints of every
// API server whose lease lives.
func (c *Controller) reconcileEndpoints(ctx context.Context) error {
	if err := c.renewLease(ctx); err != nil {
		return err
	}
	ips, err := c.liveIPs(ctx)
	if err != nil {
		return err
	}
	return c.writeEndpoints(ctx, ips)
}

func (c *Controller) leaseKey() string { return leasePrefix + c.cfg.PublicIP.String() }

// renewLease writes the lease with a TTL of 1.5 intervals.
func (c *Controller) renewLease(ctx context.Context) error {
	ttl := uint64(c.cfg.Interval.Seconds()*1.5 + 0.5)
	lease := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: c.cfg.PublicIP.String()},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: c.cfg.PublicIP.String()}}}}}
	err := c.leases.GuaranteedUpdate(ctx, c.leaseKey(), &corev1.Endpoints{}, true, nil,
		func(runtime.Object, storage.ResponseMeta) (runtime.Object, *uint64, error) {
			return lease.DeepCopy(), &ttl, nil
		}, nil)
	if err != nil {
		return fmt.Errorf("renewing the API server lease %s: %w", c.leaseKey(), err)
	}
	return nil
}

// liveIPs are the IPs of the API servers whose leases live, sorted.
func (c *Controller) liveIPs(ctx context.Context) ([]string, error) {
	var list corev1.EndpointsList
	if err := c.leases.GetList(ctx, leasePrefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, &list); err != nil {
		return nil, fmt.Errorf("listing the API server leases: %w", err)
	}
	var ips []string
	for _, l := range list.Items {
		for _, s := range l.Subsets {
			for _, a := range s.Addresses {
				if !slices.Contains(ips, a.IP) {
					ips = append(ips, a.IP)
				}
			}
		}
	}
	slices.Sort(ips)
	return ips, nil
}

// removeEndpoint deletes this API server's lease and rewrites the endpoints without it.
func (c *Controller) removeEndpoint(ctx context.Context) error {
	err := c.leases.Delete(ctx, c.leaseKey(), &corev1.Endpoints{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
	if err != nil && !storage.IsNotFound(err) {
		return err
	}
	ips, err := c.liveIPs(ctx)
	if err != nil {
		return err
	}
	return c.writeEndpoints(ctx, slices.DeleteFunc(ips, func(ip string) bool { return ip == c.cfg.PublicIP.String() }))
}

// writeEndpoints makes the kubernetes Endpoints and EndpointSlice list ips, writing only
// what differs. The Endpoints carry skip-mirror: the slice is written here, not mirrored.
func (c *Controller) writeEndpoints(ctx context.Context, ips []string) error {
	port := int32(c.cfg.Port)
	want := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
	}
	if len(ips) > 0 {
		subset := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP}}}
		for _, ip := range ips {
			subset.Addresses = append(subset.Addresses, corev1.EndpointAddress{IP: ip})
		}
		want.Subsets = []corev1.EndpointSubset{subset}
	}
	eps := c.client.CoreV1().Endpoints(metav1.NamespaceDefault)
	cur, err := eps.Get(ctx, ServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := eps.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	case err != nil:
		return err
	case !apiequality.Semantic.DeepEqual(cur.Subsets, want.Subsets) || cur.Labels[discoveryv1.LabelSkipMirror] != "true":
		cur = cur.DeepCopy()
		cur.Subsets = want.Subsets
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels[discoveryv1.LabelSkipMirror] = "true"
		if _, err := eps.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return c.writeSlice(ctx, ips, port)
}

func (c *Controller) writeSlice(ctx context.Context, ips []string, port int32) error {
	addressType := discoveryv1.AddressTypeIPv4
	if len(ips) > 0 && !strings.Contains(strings.Join(ips, ""), ".") {
		addressType = discoveryv1.AddressTypeIPv6
	}
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName}},
		AddressType: addressType,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	if len(ips) > 0 {
		want.Ports = []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}}
	}
	for _, ip := range ips {
		want.Endpoints = append(want.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	slices := c.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	cur, err := slices.Get(ctx, ServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := slices.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	case err != nil:
		return err
	case cur.AddressType != want.AddressType:
		// The address type is immutable.
		if err := slices.Delete(ctx, ServiceName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err := slices.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(cur.Ports, want.Ports) &&
		cur.Labels[discoveryv1.LabelServiceName] == ServiceName {
		return nil
	}
	cur = cur.DeepCopy()
	cur.Endpoints, cur.Ports = want.Endpoints, want.Ports
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[discoveryv1.LabelServiceName] = ServiceName
	_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}
