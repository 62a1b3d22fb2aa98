package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// /exec, /attach and /portForward: the node agent asks the runtime for a URL of its streaming
// server (the CRI's Exec, Attach, PortForward) and proxies the API server's upgraded SPDY
// connection to it, as the kubelet does with a CRI runtime.

// streamParams are the streams asked for, in the kubelet's query parameters.
func streamParams(q url.Values) (stdin, stdout, stderr, tty bool) {
	return q.Get("input") == "1", q.Get("output") == "1", q.Get("error") == "1", q.Get("tty") == "1"
}

// getExec serves /exec/{namespace}/{pod}/{container}?command=...
func (h *handler) getExec(w http.ResponseWriter, r *http.Request) {
	pod, id, ok := h.streamContainer(w, r, "/exec/")
	if !ok {
		return
	}
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		writeMessage(w, http.StatusBadRequest, "you must specify at least 1 command")
		return
	}
	stdin, stdout, stderr, tty := streamParams(q)
	if !stdin && !stdout && !stderr {
		writeMessage(w, http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr")
		return
	}
	location, err := h.runtime.GetExec(r.Context(), id, cmd, stdin, stdout, stderr, tty)
	if err != nil {
		streamingError(w, r, pod, err)
		return
	}
	proxyStream(w, r, location)
}

// getAttach serves /attach/{namespace}/{pod}/{container}.
func (h *handler) getAttach(w http.ResponseWriter, r *http.Request) {
	pod, id, ok := h.streamContainer(w, r, "/attach/")
	if !ok {
		return
	}
	stdin, stdout, stderr, tty := streamParams(r.URL.Query())
	if !stdin && !stdout && !stderr {
		writeMessage(w, http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr")
		return
	}
	location, err := h.runtime.GetAttach(r.Context(), id, stdin, stdout, stderr, tty)
	if err != nil {
		streamingError(w, r, pod, err)
		return
	}
	proxyStream(w, r, location)
}

// getPortForward serves /portForward/{namespace}/{pod}; the ports travel in the stream's
// headers (SPDY) or in ?port= (the API server's WebSocket tunnel).
func (h *handler) getPortForward(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/portForward/"), "/")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		writeMessage(w, http.StatusBadRequest, "Missing podNamespace or podID.")
		return
	}
	pod, ok := h.pods.GetPodByName(parts[0], parts[1])
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", parts[1]), http.StatusNotFound)
		return
	}
	var ports []int32
	for _, p := range r.URL.Query()["port"] {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			writeMessage(w, http.StatusBadRequest, fmt.Sprintf("invalid port %q", p))
			return
		}
		ports = append(ports, int32(n))
	}
	location, err := h.runtime.GetPortForward(r.Context(), pod.Name, pod.Namespace, pod.UID, ports)
	if err != nil {
		streamingError(w, r, pod, err)
		return
	}
	proxyStream(w, r, location)
}

// streamContainer finds the running container of /{verb}/{namespace}/{pod}/{container}, or
// answers why not.
func (h *handler) streamContainer(w http.ResponseWriter, r *http.Request, prefix string) (*v1.Pod, container.ContainerID, bool) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, prefix), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		writeMessage(w, http.StatusBadRequest, "Missing podNamespace, podID or container name.")
		return nil, container.ContainerID{}, false
	}
	pod, ok := h.pods.GetPodByName(parts[0], parts[1])
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", parts[1]), http.StatusNotFound)
		return nil, container.ContainerID{}, false
	}
	id, err := h.runningContainer(r.Context(), pod, parts[2])
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return nil, container.ContainerID{}, false
	}
	return pod, id, true
}

// runningContainer is the ID of the pod's running container of that name.
func (h *handler) runningContainer(ctx context.Context, pod *v1.Pod, name string) (container.ContainerID, error) {
	pods, err := h.runtime.GetPods(ctx, false)
	if err != nil {
		return container.ContainerID{}, err
	}
	for _, p := range pods {
		if p.ID != pod.UID {
			continue
		}
		for _, c := range p.Containers {
			if c.Name == name && c.State == container.ContainerStateRunning {
				return c.ID, nil
			}
		}
	}
	return container.ContainerID{}, fmt.Errorf("container not found (%q)", name)
}

func streamingError(w http.ResponseWriter, r *http.Request, pod *v1.Pod, err error) {
	klog.FromContext(r.Context()).Error(err, "Asking the runtime for a stream", "pod", klog.KObj(pod), "path", r.URL.Path)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// proxyStream hands the upgraded connection to the runtime's streaming server.
func proxyStream(w http.ResponseWriter, r *http.Request, location *url.URL) {
	handler := proxy.NewUpgradeAwareHandler(location, nil, false, true, streamErrorResponder{})
	handler.ServeHTTP(w, r)
}

type streamErrorResponder struct{}

func (streamErrorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Proxying a stream to the runtime", "path", r.URL.Path)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
