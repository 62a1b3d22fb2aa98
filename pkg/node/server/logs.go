package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// getContainerLogs serves /containerLogs/{namespace}/{pod}/{container}: the container's log as
// the query's PodLogOptions say, flushed as it comes (kubectl logs -f).
func (h *handler) getContainerLogs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	namespace, podName, containerName := parts[0], parts[1], parts[2]
	// The kubelet's answers, word for word.
	switch {
	case podName == "":
		writeMessage(w, http.StatusBadRequest, "Missing podID.")
		return
	case containerName == "":
		writeMessage(w, http.StatusBadRequest, "Missing container name.")
		return
	case namespace == "":
		writeMessage(w, http.StatusBadRequest, "Missing podNamespace.")
		return
	}

	opts, err := decodeLogOptions(r.URL.Query())
	if err != nil {
		writeMessage(w, http.StatusBadRequest, "Unable to decode query.")
		return
	}
	if errs := validateLogOptions(opts); len(errs) > 0 {
		writeMessage(w, http.StatusUnprocessableEntity, "Invalid request: "+errs.ToAggregate().Error())
		return
	}
	if opts.Stream != nil && *opts.Stream != v1.LogStreamAll {
		http.Error(w, fmt.Sprintf("unable to return the given log stream: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", *opts.Stream), http.StatusBadRequest)
		return
	}

	pod, ok := h.pods.GetPodByName(namespace, podName)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", podName), http.StatusNotFound)
		return
	}
	if !hasContainer(pod, containerName) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", containerName, podName), http.StatusNotFound)
		return
	}
	id, err := h.logContainerID(r, pod, containerName, opts.Previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}

	// Send the headers now: a client following a quiet container must not wait for its first line.
	w.Header().Set("Content-Type", "text/plain")
	out := &flushWriter{w: w, rc: http.NewResponseController(w)}
	if _, err := out.Write(nil); err != nil {
		return
	}
	if err := h.runtime.GetContainerLogs(ctx, pod, id, opts, out, out); err != nil && ctx.Err() == nil {
		// The status is sent already; the reason goes into the body, as the kubelet's does.
		klog.FromContext(ctx).Error(err, "Reading a container's log", "pod", klog.KObj(pod), "container", containerName)
		_, _ = out.Write([]byte(err.Error()))
	}
}

// writeMessage answers as the kubelet does for malformed log requests: {"message": "..."}.
func writeMessage(w http.ResponseWriter, code int, message string) {
	data, _ := json.Marshal(map[string]string{"message": message})
	http.Error(w, string(data), code)
}

// flushWriter sends every write at once; the runtime may write stdout and stderr from two
// goroutines.
type flushWriter struct {
	mu sync.Mutex
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	if err := f.rc.Flush(); err != nil {
		return n, err
	}
	return n, nil
}

// decodeLogOptions reads the query as the kubelet's parameter codec does: the first value of a
// parameter counts, "false" and "0" are false, and the old "tail" stands for tailLines ("all"
// for no limit).
func decodeLogOptions(query url.Values) (*v1.PodLogOptions, error) {
	if tail := query.Get("tail"); tail != "" {
		query["tailLines"] = []string{tail}
		if tail == "all" {
			delete(query, "tailLines")
		}
	}
	opts := &v1.PodLogOptions{}
	for _, p := range []struct {
		name    string
		convert func(in []string) error
	}{
		{"container", func(in []string) error { return runtime.Convert_Slice_string_To_string(&in, &opts.Container, nil) }},
		{"follow", func(in []string) error { return runtime.Convert_Slice_string_To_bool(&in, &opts.Follow, nil) }},
		{"previous", func(in []string) error { return runtime.Convert_Slice_string_To_bool(&in, &opts.Previous, nil) }},
		{"timestamps", func(in []string) error { return runtime.Convert_Slice_string_To_bool(&in, &opts.Timestamps, nil) }},
		{"sinceSeconds", func(in []string) error {
			return runtime.Convert_Slice_string_To_Pointer_int64(&in, &opts.SinceSeconds, nil)
		}},
		{"sinceTime", func(in []string) error {
			return metav1.Convert_Slice_string_To_Pointer_v1_Time(&in, &opts.SinceTime, nil)
		}},
		{"tailLines", func(in []string) error {
			return runtime.Convert_Slice_string_To_Pointer_int64(&in, &opts.TailLines, nil)
		}},
		{"limitBytes", func(in []string) error {
			return runtime.Convert_Slice_string_To_Pointer_int64(&in, &opts.LimitBytes, nil)
		}},
		{"insecureSkipTLSVerifyBackend", func(in []string) error {
			return runtime.Convert_Slice_string_To_bool(&in, &opts.InsecureSkipTLSVerifyBackend, nil)
		}},
		{"stream", func(in []string) error { s := in[0]; opts.Stream = &s; return nil }},
	} {
		if in := query[p.name]; len(in) > 0 {
			if err := p.convert(in); err != nil {
				return nil, fmt.Errorf("query parameter %q: %w", p.name, err)
			}
		}
	}
	return opts, nil
}

// validateLogOptions checks the options as the API server does (pods/log).
func validateLogOptions(opts *v1.PodLogOptions) field.ErrorList {
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
	return errs
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// logContainerID finds the container instance whose log to read: the pod status's (the status
// source's when it has one), or, before the status knows the container, the runtime's newest
// (previous: the one before).
func (h *handler) logContainerID(r *http.Request, pod *v1.Pod, name string, previous bool) (container.ContainerID, error) {
	status := pod.Status
	if source, ok := h.pods.(PodStatusSource); ok {
		if s, ok := source.GetPodStatus(pod.UID); ok {
			status = s
		}
	}
	for _, statuses := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range statuses {
			if statuses[i].Name == name {
				return containerIDFromStatus(pod.Name, &statuses[i], previous)
			}
		}
	}
	return h.runtimeContainerID(r, pod, name, previous)
}

// containerIDFromStatus picks the instance as the kubelet's validateContainerLogStatus does:
// previous wants the last terminated one; otherwise the running one, the terminated one, or the
// last terminated one; a waiting container has no log yet.
func containerIDFromStatus(podName string, cs *v1.ContainerStatus, previous bool) (container.ContainerID, error) {
	last := cs.LastTerminationState.Terminated
	var id string
	switch state := cs.State; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return container.ContainerID{}, fmt.Errorf("previous terminated container %q in pod %q not found", cs.Name, podName)
		}
		id = last.ContainerID
	case state.Running != nil:
		id = cs.ContainerID
	case state.Terminated != nil:
		id = state.Terminated.ContainerID
		if id == "" && last != nil {
			id = last.ContainerID
		}
		if id == "" {
			return container.ContainerID{}, fmt.Errorf("container %q in pod %q is terminated", cs.Name, podName)
		}
	case last != nil:
		if last.ContainerID == "" {
			return container.ContainerID{}, fmt.Errorf("container %q in pod %q is terminated", cs.Name, podName)
		}
		id = last.ContainerID
	case state.Waiting != nil:
		switch reason := state.Waiting.Reason; reason {
		case container.ErrImagePull.Error():
			return container.ContainerID{}, fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", cs.Name, podName)
		case container.ErrImagePullBackOff.Error():
			return container.ContainerID{}, fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", cs.Name, podName)
		default:
			return container.ContainerID{}, fmt.Errorf("container %q in pod %q is waiting to start: %v", cs.Name, podName, reason)
		}
	default:
		return container.ContainerID{}, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", cs.Name, podName)
	}
	return parseContainerID(id)
}

// runtimeContainerID asks the runtime for the container's instances, the newest first.
func (h *handler) runtimeContainerID(r *http.Request, pod *v1.Pod, name string, previous bool) (container.ContainerID, error) {
	status, err := h.runtime.GetPodStatus(r.Context(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return container.ContainerID{}, fmt.Errorf("container %q in pod %q is not available: %w", name, pod.Name, err)
	}
	var instances []container.ContainerID
	for _, c := range status.ContainerStatuses {
		if c.Name == name {
			instances = append(instances, c.ID)
		}
	}
	switch {
	case previous && len(instances) < 2:
		return container.ContainerID{}, fmt.Errorf("previous terminated container %q in pod %q not found", name, pod.Name)
	case previous:
		return instances[1], nil
	case len(instances) == 0:
		return container.ContainerID{}, fmt.Errorf("container %q in pod %q is not available", name, pod.Name)
	default:
		return instances[0], nil
	}
}

// parseContainerID splits "containerd://abc".
func parseContainerID(s string) (container.ContainerID, error) {
	runtimeType, id, ok := strings.Cut(s, "://")
	if !ok || runtimeType == "" || id == "" {
		return container.ContainerID{}, errors.New("invalid container ID: " + s)
	}
	return container.ContainerID{Type: runtimeType, ID: id}, nil
}
