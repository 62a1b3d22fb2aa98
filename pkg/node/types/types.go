// Package types holds the words the node agent's parts share, as seed 000 uses them: a
// PodUpdate from a config source (file, http, apiserver) with its operation, the kind of sync
// a pod worker does, and how a pod says where it came from (static and mirror pods).
package types

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// PodOperation is what a PodUpdate does to the node agent's set of pods.
type PodOperation int

const (
	// SET replaces all the pods of a source (sources send it; the merger turns it into the
	// operations below).
	SET PodOperation = iota
	// ADD: pods new to the node agent.
	ADD
	// DELETE: pods being deleted gracefully (deletionTimestamp set); handled as updates.
	DELETE
	// REMOVE: pods gone from their source; they must stop.
	REMOVE
	// UPDATE: pods whose spec or metadata changed.
	UPDATE
	// RECONCILE: pods whose status changed at the source (only the status needs syncing).
	RECONCILE
)

func (op PodOperation) String() string {
	return [...]string{"SET", "ADD", "DELETE", "REMOVE", "UPDATE", "RECONCILE"}[op]
}

// The sources pods come from.
const (
	FileSource      = "file"
	HTTPSource      = "http"
	ApiserverSource = "api"
	// AllSource means every source.
	AllSource = "*"
)

// PodUpdate is one change from one source.
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     PodOperation
	Source string
}

// The annotations by which the node agent marks a pod's origin, as the kubelet does.
const (
	ConfigSourceAnnotationKey    = "kubernetes.io/config.source"
	ConfigMirrorAnnotationKey    = v1.MirrorPodAnnotationKey
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	ConfigHashAnnotationKey      = "kubernetes.io/config.hash"
)

// GetPodSource returns the source of a pod.
func GetPodSource(pod *v1.Pod) (string, error) {
	if pod.Annotations != nil {
		if source, ok := pod.Annotations[ConfigSourceAnnotationKey]; ok {
			return source, nil
		}
	}
	return "", fmt.Errorf("cannot get source of pod %q", pod.UID)
}

// IsStaticPod reports a pod that came from a file or a URL, not the API.
func IsStaticPod(pod *v1.Pod) bool {
	source, err := GetPodSource(pod)
	return err == nil && source != ApiserverSource
}

// IsMirrorPod reports the API's copy of a static pod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return ok
}

// GetPodFullName is the name the runtime knows a pod by: name_namespace.
func GetPodFullName(pod *v1.Pod) string {
	return pod.Name + "_" + pod.Namespace
}

// SyncPodType is why a pod worker syncs a pod.
type SyncPodType int

const (
	// SyncPodSync: a periodic or event-driven resync.
	SyncPodSync SyncPodType = iota
	// SyncPodUpdate: the pod changed.
	SyncPodUpdate
	// SyncPodCreate: the pod is new.
	SyncPodCreate
	// SyncPodKill: the pod must stop (deleted, evicted, rejected).
	SyncPodKill
)

func (t SyncPodType) String() string {
	return [...]string{"sync", "update", "create", "kill"}[t]
}

// SystemCriticalPriority is the lowest priority of a critical pod (system-cluster-critical).
const SystemCriticalPriority = 2000000000

// IsCriticalPod: static and mirror pods, and pods of a system-critical priority; the node
// agent neither rejects them for lack of resources nor evicts them.
func IsCriticalPod(pod *v1.Pod) bool {
	return IsStaticPod(pod) || IsMirrorPod(pod) ||
		(pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority)
}
