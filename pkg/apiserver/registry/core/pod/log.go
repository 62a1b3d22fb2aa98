package pod

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/transport"
)

// DefaultKubeletPort is the node API's port when a node does not report one.
const DefaultKubeletPort = 10250

// KubeletConnection is how the API server reaches node agents: HTTPS with its
// apiserver-kubelet-client certificate, trusting the CA the nodes' serving certificates chain to.
type KubeletConnection struct {
	Transport http.RoundTripper
	// Port is used for nodes whose status has no kubelet endpoint port.
	Port int
}

// NewKubeletConnection builds the connection from PEM files. certFile and keyFile may be empty
// (no client certificate); they are read again when they change, so renewed certificates are
// picked up without a restart.
func NewKubeletConnection(caFile, certFile, keyFile string) (*KubeletConnection, error) {
	tlsConfig, err := transport.TLSConfigFor(&transport.Config{TLS: transport.TLSConfig{
		CAFile: caFile, CertFile: certFile, KeyFile: keyFile, ReloadTLSFiles: true,
	}})
	if err != nil {
		return nil, fmt.Errorf("TLS configuration for node agents: %w", err)
	}
	rt := utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig: tlsConfig,
		DialContext:     (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		// A follow stream is long-lived; idle connections to many nodes are not.
		MaxIdleConnsPerHost: 10,
		IdleConnTimeout:     90 * time.Second,
	})
	return &KubeletConnection{Transport: rt, Port: DefaultKubeletPort}, nil
}

// getter reads one object of a store: the pods and nodes registries.
type getter interface {
	Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error)
}

// LogREST serves pods/log: it finds the pod's node and streams the node agent's
// /containerLogs answer to the client (kubectl logs, kubectl logs -f).
type LogREST struct {
	podLocator
}

// podLocator finds a pod's node agent: the pod, its node, and how to reach the node.
type podLocator struct {
	pods    getter
	nodes   getter
	kubelet *KubeletConnection
}

var (
	_ rest.GetterWithOptions = &LogREST{}
	_ rest.StorageMetadata   = &LogREST{}
)

// NewLogREST returns pods/log over the pods and nodes stores.
func NewLogREST(pods, nodes *genericregistry.Store, kubelet *KubeletConnection) *LogREST {
	return &LogREST{podLocator{pods: pods, nodes: nodes, kubelet: kubelet}}
}

// New returns an empty Pod, the resource the subresource belongs to.
func (r *LogREST) New() runtime.Object { return &corev1.Pod{} }

// Destroy does nothing: the pods store owns the storage.
func (r *LogREST) Destroy() {}

// ProducesMIMETypes says the log is text, for the OpenAPI document.
func (r *LogREST) ProducesMIMETypes(verb string) []string { return []string{"text/plain"} }

// ProducesObject says the response is a string, for the OpenAPI document.
func (r *LogREST) ProducesObject(verb string) interface{} { return "" }

// NewGetOptions returns the options the query is decoded into.
func (r *LogREST) NewGetOptions() (runtime.Object, bool, string) {
	return &corev1.PodLogOptions{}, false, ""
}

// Get validates the options and returns a stream of the container's log from its node.
func (r *LogREST) Get(ctx context.Context, name string, options runtime.Object) (runtime.Object, error) {
	opts, ok := options.(*corev1.PodLogOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", options)
	}
	if errs := ValidatePodLogOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("PodLogOptions").GroupKind(), name, errs)
	}
	location, err := r.logLocation(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return &genericrest.LocationStreamer{
		// A nil location (a pod not on a node yet) streams nothing, as in Kubernetes.
		Location:        location,
		Transport:       r.kubelet.Transport,
		ContentType:     "text/plain",
		Flush:           opts.Follow,
		ResponseChecker: genericrest.NewGenericHttpResponseChecker(corev1.Resource("pods/log"), name),
		RedirectChecker: genericrest.PreventRedirects,
	}, nil
}

// ValidatePodLogOptions checks the options as Kubernetes does with the PodLogsQuerySplitStreams
// feature off (its default): no stream may be chosen.
func ValidatePodLogOptions(opts *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	if opts.Stream != nil {
		errs = append(errs, field.Forbidden(field.NewPath("stream"), "may not be specified"))
	}
	return errs
}

// logLocation is the node agent's URL for the container's log; nil when the pod has no node.
func (r *LogREST) logLocation(ctx context.Context, name string, opts *corev1.PodLogOptions) (*url.URL, error) {
	obj, err := r.pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	container, err := logContainer(pod, opts.Container)
	if err != nil {
		return nil, err
	}
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	host, err := r.nodeHost(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	return &url.URL{
		Scheme:   "https",
		Host:     host,
		Path:     fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container),
		RawQuery: logQuery(opts).Encode(),
	}, nil
}

// logContainer picks the container: the one asked for, which must exist, or the pod's only one.
func logContainer(pod *corev1.Pod, name string) (string, error) {
	var all []string
	for _, c := range pod.Spec.InitContainers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		all = append(all, c.Name)
	}
	if name != "" {
		for _, n := range all {
			if n == name {
				return name, nil
			}
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, all))
	}
}

// nodeAddressOrder is the order in which a node's addresses are tried: the internal address
// first, which is where berth's node agents serve (127.0.0.1 on a single machine).
var nodeAddressOrder = []corev1.NodeAddressType{
	corev1.NodeInternalIP, corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalIP, corev1.NodeExternalDNS,
}

// nodeHost is host:port of the node's API.
func (r *podLocator) nodeHost(ctx context.Context, nodeName string) (string, error) {
	obj, err := r.nodes.Get(ctx, nodeName, &metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return KubeletHost(obj.(*corev1.Node), r.kubelet.Port)
}

// KubeletHost is host:port of a node's API: its preferred address and the port it reports
// (defaultPort when it reports none).
func KubeletHost(node *corev1.Node, defaultPort int) (string, error) {
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = defaultPort
	}
	for _, t := range nodeAddressOrder {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return net.JoinHostPort(a.Address, strconv.Itoa(port)), nil
			}
		}
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses)
}

// logQuery is the node agent's query for opts: only what is set.
func logQuery(opts *corev1.PodLogOptions) url.Values {
	q := url.Values{}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.Previous {
		q.Set("previous", "true")
	}
	if opts.Timestamps {
		q.Set("timestamps", "true")
	}
	if opts.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*opts.SinceSeconds, 10))
	}
	if opts.SinceTime != nil {
		q.Set("sinceTime", opts.SinceTime.Format(time.RFC3339))
	}
	if opts.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	if opts.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*opts.LimitBytes, 10))
	}
	return q
}
