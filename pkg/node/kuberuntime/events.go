package kuberuntime

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
)

// The event reasons the Manager records, as the kubelet writes them.
const (
	eventCreated             = "Created"
	eventStarted             = "Started"
	eventFailed              = "Failed"
	eventKilling             = "Killing"
	eventBackOff             = "BackOff"
	eventFailedPostStartHook = "FailedPostStartHook"
	eventFailedPreStopHook   = "FailedPreStopHook"
	eventSandboxChanged      = "SandboxChanged"
	eventFailedCreateSandbox = "FailedCreatePodSandBox"
	eventFailedSandboxStatus = "FailedPodSandBoxStatus"
)

// podDesc is how the kubelet names a pod in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// podRef is a reference to the pod for its events.
func podRef(ctx context.Context, pod *v1.Pod) *v1.ObjectReference {
	ref, err := reference.GetReference(scheme.Scheme, pod)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot make a reference to the pod", "pod", klog.KObj(pod))
		return nil
	}
	return ref
}

// containerRef is a reference to one container of the pod: the pod with the container's
// field path (spec.containers{name}, spec.initContainers{name},
// spec.ephemeralContainers{name}).
func containerRef(pod *v1.Pod, c *v1.Container) (*v1.ObjectReference, error) {
	fieldPath := "implicitly required container " + c.Name
	for _, group := range []struct {
		path  string
		names func() []string
	}{
		{"spec.containers", func() []string { return names(pod.Spec.Containers) }},
		{"spec.initContainers", func() []string { return names(pod.Spec.InitContainers) }},
		{"spec.ephemeralContainers", func() []string {
			var out []string
			for i := range pod.Spec.EphemeralContainers {
				out = append(out, pod.Spec.EphemeralContainers[i].Name)
			}
			return out
		}},
	} {
		for _, name := range group.names() {
			if name == c.Name {
				fieldPath = group.path + "{" + name + "}"
			}
		}
	}
	return reference.GetPartialReference(scheme.Scheme, pod, fieldPath)
}

func names(cs []v1.Container) []string {
	out := make([]string, len(cs))
	for i := range cs {
		out[i] = cs[i].Name
	}
	return out
}

// recordContainerEvent records an event on a container. A container id in the message is
// replaced by the container's name, so that events of restarts aggregate.
func (m *Manager) recordContainerEvent(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID, eventType, reason, format string, args ...interface{}) {
	if m.recorder == nil {
		return
	}
	ref, err := containerRef(pod, c)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot make a container reference", "pod", klog.KObj(pod), "container", c.Name)
		return
	}
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	if containerID != "" {
		msg = strings.ReplaceAll(msg, containerID, c.Name)
	}
	m.recorder.Event(ref, eventType, reason, msg)
}

// recordPodEvent records an event on the pod.
func (m *Manager) recordPodEvent(ctx context.Context, pod *v1.Pod, eventType, reason, format string, args ...interface{}) {
	if m.recorder == nil {
		return
	}
	if ref := podRef(ctx, pod); ref != nil {
		m.recorder.Eventf(ref, eventType, reason, format, args...)
	}
}
