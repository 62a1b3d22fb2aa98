package pod

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ProxyMethods are the methods pods/proxy and services/proxy pass on.
var ProxyMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// ProxyREST serves pods/proxy: /api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH
// goes to PATH on the pod's IP, as kube-apiserver does; without a port, the first port a
// container declares.
type ProxyREST struct {
	pods      *genericregistry.Store
	transport http.RoundTripper
}

var _ rest.Connecter = &ProxyREST{}

// NewProxyREST returns pods/proxy over the pods store, sending through transport (the API
// server's proxy transport: pods' serving certificates are not checked, as upstream's).
func NewProxyREST(pods *genericregistry.Store, transport http.RoundTripper) *ProxyREST {
	return &ProxyREST{pods: pods, transport: transport}
}

func (r *ProxyREST) New() runtime.Object { return &corev1.PodProxyOptions{} }
func (r *ProxyREST) Destroy()            {}

// ConnectMethods are the methods proxied.
func (r *ProxyREST) ConnectMethods() []string { return ProxyMethods }

// NewConnectOptions takes the rest of the URL as the path.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodProxyOptions{}, true, "path"
}

// Connect proxies to the pod.
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	obj, err := r.pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = fmt.Sprint(c.Ports[0].ContainerPort)
				break
			}
		}
	}
	location, err := ProxyLocation(scheme, pod.Status.PodIP, port)
	if err != nil {
		return nil, err
	}
	location.Path = utilnet.JoinPreservingTrailingSlash(location.Path, o.Path)
	return NewProxyHandler(location, r.transport, responder), nil
}

// ProxyLocation is the URL of ip:port; an IP that is not a global unicast address (none yet,
// loopback, link-local) is refused, as kube-apiserver refuses it.
func ProxyLocation(scheme, ip, port string) (*url.URL, error) {
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsGlobalUnicast() {
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	loc := &url.URL{Scheme: scheme}
	if loc.Scheme == "" {
		loc.Scheme = "http"
	}
	switch {
	case port != "":
		loc.Host = net.JoinHostPort(ip, port)
	case strings.Contains(ip, ":"):
		loc.Host = "[" + ip + "]"
	default:
		loc.Host = ip
	}
	return loc, nil
}

// NewProxyHandler proxies to location, rewriting links in HTML answers as kube-apiserver's
// proxy does (so that a browser under /proxy/ stays there).
func NewProxyHandler(location *url.URL, transport http.RoundTripper, responder rest.Responder) http.Handler {
	return proxy.NewUpgradeAwareHandler(location, transport, true, false, proxy.NewErrorResponder(responder))
}
