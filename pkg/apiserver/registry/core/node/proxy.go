package node

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// ProxyREST serves nodes/proxy: a request to /api/v1/nodes/NAME/proxy/PATH goes to PATH on
// the node's API (/stats/summary, /metrics, /pods, /logs/...), authenticated by the API
// server's client certificate, as kube-apiserver does.
type ProxyREST struct {
	nodes   *genericregistry.Store
	kubelet *pod.KubeletConnection
}

var _ rest.Connecter = &ProxyREST{}

// NewProxyREST returns nodes/proxy over the nodes store.
func NewProxyREST(nodes *genericregistry.Store, kubelet *pod.KubeletConnection) *ProxyREST {
	return &ProxyREST{nodes: nodes, kubelet: kubelet}
}

func (r *ProxyREST) New() runtime.Object { return &corev1.NodeProxyOptions{} }
func (r *ProxyREST) Destroy()            {}

// ConnectMethods are the methods proxied.
func (r *ProxyREST) ConnectMethods() []string {
	return []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
}

// NewConnectOptions takes the rest of the URL as the path.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.NodeProxyOptions{}, true, "path"
}

// Connect proxies to the node's API.
func (r *ProxyREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.NodeProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	obj, err := r.nodes.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	host, err := pod.KubeletHost(obj.(*corev1.Node), r.kubelet.Port)
	if err != nil {
		return nil, err
	}
	path := o.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	location := &url.URL{Scheme: "https", Host: host, Path: path}
	return proxy.NewUpgradeAwareHandler(location, r.kubelet.Transport, true, false, proxy.NewErrorResponder(responder)), nil
}
