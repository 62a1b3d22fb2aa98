package kuberuntime

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The labels and annotations berth puts on sandboxes and containers, the kubelet's own keys,
// so that everything GetPodStatus and KillPod need survives a node agent restart in the
// runtime itself (and crictl shows what it shows for the kubelet's containers).
const (
	podNameLabel       = "io.kubernetes.pod.name"
	podNamespaceLabel  = "io.kubernetes.pod.namespace"
	podUIDLabel        = "io.kubernetes.pod.uid"
	containerNameLabel = "io.kubernetes.container.name"

	containerHashAnnotation          = "io.kubernetes.container.hash"
	restartCountAnnotation           = "io.kubernetes.container.restartCount"
	terminationMessagePathAnnotation = "io.kubernetes.container.terminationMessagePath"
	terminationPolicyAnnotation      = "io.kubernetes.container.terminationMessagePolicy"
	preStopHandlerAnnotation         = "io.kubernetes.container.preStopHandler"
	containerPortsAnnotation         = "io.kubernetes.container.ports"
	podDeletionGraceAnnotation       = "io.kubernetes.pod.deletionGracePeriod"
	podTerminationGraceAnnotation    = "io.kubernetes.pod.terminationGracePeriod"
)

// HashContainer is the hash of the container fields whose change requires a restart. On a
// running pod the API lets only the image change (everything else in a container is
// immutable, and a static pod that changes gets a new UID), so the hash covers the name and
// the image: a berth upgrade that defaults a new field restarts nothing. SyncPod compares
// it with the hash annotated on the running container.
func HashContainer(c *v1.Container) uint64 {
	h := fnv.New64a()
	h.Write([]byte(c.Name))
	h.Write([]byte{0})
	h.Write([]byte(c.Image))
	return h.Sum64()
}

// newPodLabels are a sandbox's labels: the pod's own and the three that name it.
func newPodLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[podNameLabel] = pod.Name
	labels[podNamespaceLabel] = pod.Namespace
	labels[podUIDLabel] = string(pod.UID)
	return labels
}

func newContainerLabels(c *v1.Container, pod *v1.Pod) map[string]string {
	return map[string]string{
		podNameLabel:       pod.Name,
		podNamespaceLabel:  pod.Namespace,
		podUIDLabel:        string(pod.UID),
		containerNameLabel: c.Name,
	}
}

func newContainerAnnotations(c *v1.Container, pod *v1.Pod, restartCount int) map[string]string {
	a := map[string]string{
		containerHashAnnotation:          strconv.FormatUint(HashContainer(c), 16),
		restartCountAnnotation:           strconv.Itoa(restartCount),
		terminationMessagePathAnnotation: c.TerminationMessagePath,
		terminationPolicyAnnotation:      string(c.TerminationMessagePolicy),
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[podDeletionGraceAnnotation] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[podTerminationGraceAnnotation] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if raw, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[preStopHandlerAnnotation] = string(raw)
		}
	}
	if len(c.Ports) > 0 {
		if raw, err := json.Marshal(c.Ports); err == nil {
			a[containerPortsAnnotation] = string(raw)
		}
	}
	return a
}

// labeledContainer is what a container's labels say.
type labeledContainer struct {
	PodName, PodNamespace, ContainerName string
	PodUID                               types.UID
}

func containerInfoFromLabels(labels map[string]string) labeledContainer {
	return labeledContainer{
		PodName:       labels[podNameLabel],
		PodNamespace:  labels[podNamespaceLabel],
		PodUID:        types.UID(labels[podUIDLabel]),
		ContainerName: labels[containerNameLabel],
	}
}

// annotatedContainer is what a container's annotations say. Values that do not parse read
// as unset: a container berth did not create still has a status.
type annotatedContainer struct {
	Hash                      uint64
	RestartCount              int
	TerminationMessagePath    string
	TerminationMessagePolicy  v1.TerminationMessagePolicy
	PodDeletionGracePeriod    *int64
	PodTerminationGracePeriod *int64
	PreStop                   *v1.LifecycleHandler
	Ports                     []v1.ContainerPort
}

// containerHash is the spec hash the container was created with (0 if none parses): all
// a listing needs of the annotations, read without the rest.
func containerHash(a map[string]string) uint64 {
	h, _ := strconv.ParseUint(a[containerHashAnnotation], 16, 64)
	return h
}

func containerInfoFromAnnotations(a map[string]string) annotatedContainer {
	info := annotatedContainer{
		TerminationMessagePath:   a[terminationMessagePathAnnotation],
		TerminationMessagePolicy: v1.TerminationMessagePolicy(a[terminationPolicyAnnotation]),
	}
	info.Hash = containerHash(a)
	info.RestartCount, _ = strconv.Atoi(a[restartCountAnnotation])
	parseInt64 := func(key string) *int64 {
		if s, ok := a[key]; ok {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				return &v
			}
		}
		return nil
	}
	info.PodDeletionGracePeriod = parseInt64(podDeletionGraceAnnotation)
	info.PodTerminationGracePeriod = parseInt64(podTerminationGraceAnnotation)
	if raw, ok := a[preStopHandlerAnnotation]; ok {
		h := &v1.LifecycleHandler{}
		if json.Unmarshal([]byte(raw), h) == nil {
			info.PreStop = h
		}
	}
	if raw, ok := a[containerPortsAnnotation]; ok {
		_ = json.Unmarshal([]byte(raw), &info.Ports)
	}
	return info
}
