package pod

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	translator "k8s.io/apiserver/pkg/util/proxy"
)

// pods/exec, pods/attach and pods/portforward: the API server finds the pod's node and proxies
// the client's upgraded connection (SPDY) to the node agent's /exec, /attach or /portForward,
// which hands it on to the container runtime's streaming server. kubectl speaks WebSocket
// first: exec and attach over the v5 channel protocol are translated to SPDY here, and
// port-forward's WebSocket tunnel carries SPDY through, as kube-apiserver does.

// ExecREST serves pods/exec.
type ExecREST struct{ podLocator }

// AttachREST serves pods/attach.
type AttachREST struct{ podLocator }

// PortForwardREST serves pods/portforward.
type PortForwardREST struct{ podLocator }

var (
	_ rest.Connecter = &ExecREST{}
	_ rest.Connecter = &AttachREST{}
	_ rest.Connecter = &PortForwardREST{}
)

// NewStreamRESTs returns pods/exec, pods/attach and pods/portforward over the pods and nodes
// stores.
func NewStreamRESTs(pods, nodes *genericregistry.Store, kubelet *KubeletConnection) (*ExecREST, *AttachREST, *PortForwardREST) {
	l := podLocator{pods: pods, nodes: nodes, kubelet: kubelet}
	return &ExecREST{l}, &AttachREST{l}, &PortForwardREST{l}
}

var streamMethods = []string{http.MethodGet, http.MethodPost}

func (r *ExecREST) New() runtime.Object      { return &corev1.PodExecOptions{} }
func (r *ExecREST) Destroy()                 {}
func (r *ExecREST) ConnectMethods() []string { return streamMethods }
func (r *ExecREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodExecOptions{}, false, ""
}

// Connect proxies an exec stream to the container's node.
func (r *ExecREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodExecOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	if len(o.Command) == 0 {
		return nil, apierrors.NewBadRequest("you must specify at least 1 command")
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return nil, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	q := streamQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY)
	for _, c := range o.Command {
		q.Add("command", c)
	}
	location, err := r.containerLocation(ctx, name, o.Container, "exec", q)
	if err != nil {
		return nil, err
	}
	return r.streamHandler(location, responder, translator.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}), nil
}

func (r *AttachREST) New() runtime.Object      { return &corev1.PodAttachOptions{} }
func (r *AttachREST) Destroy()                 {}
func (r *AttachREST) ConnectMethods() []string { return streamMethods }
func (r *AttachREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodAttachOptions{}, false, ""
}

// Connect proxies an attach stream to the container's node.
func (r *AttachREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodAttachOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return nil, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	location, err := r.containerLocation(ctx, name, o.Container, "attach", streamQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY))
	if err != nil {
		return nil, err
	}
	return r.streamHandler(location, responder, translator.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}), nil
}

func (r *PortForwardREST) New() runtime.Object      { return &corev1.PodPortForwardOptions{} }
func (r *PortForwardREST) Destroy()                 {}
func (r *PortForwardREST) ConnectMethods() []string { return streamMethods }
func (r *PortForwardREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodPortForwardOptions{}, false, ""
}

// Connect proxies a port-forward stream to the pod's node.
func (r *PortForwardREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodPortForwardOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	q := url.Values{}
	for _, p := range o.Ports {
		if p < 1 || p > 65535 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("port %d must be between 1 and 65535", p))
		}
		q.Add("port", strconv.Itoa(int(p)))
	}
	pod, host, err := r.podOnNode(ctx, name)
	if err != nil {
		return nil, err
	}
	location := &url.URL{Scheme: "https", Host: host, Path: fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name), RawQuery: q.Encode()}
	handler := proxy.NewUpgradeAwareHandler(location, r.kubelet.Transport, false, true, proxy.NewErrorResponder(responder))
	// kubectl's WebSocket tunnel carries the SPDY stream through to the node.
	return translator.NewTunnelingHandler(handler), nil
}

// streamHandler proxies SPDY upgrades as they are and translates WebSocket v5 ones.
func (r *podLocator) streamHandler(location *url.URL, responder rest.Responder, opts translator.Options) http.Handler {
	upgrade := proxy.NewUpgradeAwareHandler(location, r.kubelet.Transport, false, true, proxy.NewErrorResponder(responder))
	ws := translator.NewStreamTranslatorHandler(location, r.kubelet.Transport, 0, opts)
	return translator.NewTranslatingHandler(upgrade, ws, wsstream.IsWebSocketRequestWithStreamCloseProtocol)
}

// streamQuery is the node agent's query for the streams asked for.
func streamQuery(stdin, stdout, stderr, tty bool) url.Values {
	q := url.Values{}
	for param, on := range map[string]bool{"input": stdin, "output": stdout, "error": stderr, "tty": tty} {
		if on {
			q.Set(param, "1")
		}
	}
	return q
}

// containerLocation is the node agent's URL for a stream of one of the pod's containers.
func (r *podLocator) containerLocation(ctx context.Context, name, containerName, verb string, q url.Values) (*url.URL, error) {
	pod, host, err := r.podOnNode(ctx, name)
	if err != nil {
		return nil, err
	}
	c, err := logContainer(pod, containerName)
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "https", Host: host, Path: fmt.Sprintf("/%s/%s/%s/%s", verb, pod.Namespace, pod.Name, c), RawQuery: q.Encode()}, nil
}

// podOnNode reads the pod and its node agent's host:port; a pod without a node is a bad
// request.
func (r *podLocator) podOnNode(ctx context.Context, name string) (*corev1.Pod, string, error) {
	obj, err := r.pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName == "" {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	host, err := r.nodeHost(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, "", err
	}
	return pod, host, nil
}
