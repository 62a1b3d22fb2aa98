package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// EndpointSlices lists a Service's EndpointSlices (those labelled with its name).
type EndpointSlices func(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error)

// ProxyREST serves services/proxy: /api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy/PATH
// goes to PATH on one of the Service's ready endpoints, chosen at random, as kube-apiserver
// does; PORT is a port's name or number (a number is turned into its name).
type ProxyREST struct {
	services  *genericregistry.Store
	pods      *genericregistry.Store
	slices    EndpointSlices
	transport http.RoundTripper
}

var _ rest.Connecter = &ProxyREST{}

// NewProxyREST returns services/proxy.
func NewProxyREST(services, pods *genericregistry.Store, slices EndpointSlices, transport http.RoundTripper) *ProxyREST {
	return &ProxyREST{services: services, pods: pods, slices: slices, transport: transport}
}

func (r *ProxyREST) New() runtime.Object      { return &corev1.ServiceProxyOptions{} }
func (r *ProxyREST) Destroy()                 {}
func (r *ProxyREST) ConnectMethods() []string { return pod.ProxyMethods }
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.ServiceProxyOptions{}, true, "path"
}

// Connect proxies to an endpoint.
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.ServiceProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	obj, err := r.services.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	svc := obj.(*corev1.Service)
	portName, found := port, port == ""
	for _, p := range svc.Spec.Ports {
		if fmt.Sprint(p.Port) == port || p.Name == port {
			portName, found = p.Name, true
			break
		}
	}
	if !found {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %q found for service %q", port, name))
	}
	ns := genericapirequest.NamespaceValue(ctx)
	slices, err := r.slices(ctx, ns, name)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	type target struct {
		ip   string
		port int32
		ref  *corev1.ObjectReference
	}
	var targets []target
	for _, s := range slices {
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		for _, p := range s.Ports {
			pname := ""
			if p.Name != nil {
				pname = *p.Name
			}
			if pname != portName || p.Port == nil {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
					continue
				}
				targets = append(targets, target{ep.Addresses[0], *p.Port, ep.TargetRef})
			}
		}
	}
	rand.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	for _, t := range targets {
		// As kube-apiserver: only an endpoint that is a pod of this namespace with that IP,
		// so that a user's hand-made endpoints cannot point the server elsewhere.
		if t.ref == nil || t.ref.Kind != "Pod" || t.ref.Namespace != ns {
			continue
		}
		obj, err := r.pods.Get(ctx, t.ref.Name, &metav1.GetOptions{})
		if err != nil {
			continue
		}
		p := obj.(*corev1.Pod)
		match := false
		for _, ip := range p.Status.PodIPs {
			match = match || ip.IP == t.ip
		}
		if !match {
			continue
		}
		location, err := pod.ProxyLocation(scheme, t.ip, fmt.Sprint(t.port))
		if err != nil {
			continue
		}
		location.Path = utilnet.JoinPreservingTrailingSlash(location.Path, o.Path)
		return pod.NewProxyHandler(location, r.transport, responder), nil
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
}
