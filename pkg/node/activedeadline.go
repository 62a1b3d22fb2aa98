package node

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// The active deadline (seed 000's activeDeadlineHandler, both a PodSyncLoopHandler and a
// PodSyncHandler): a pod that has run on the node longer than its activeDeadlineSeconds
// fails with DeadlineExceeded, and its containers are stopped.

const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// pastActiveDeadline reports whether pod has been active longer than its deadline, counted
// from the start time the node agent gave it.
func (kl *Kubelet) pastActiveDeadline(pod *v1.Pod) bool {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return false
	}
	status := pod.Status
	if s, ok := kl.statusManager.GetPodStatus(pod.UID); ok {
		status = s
	}
	if status.StartTime == nil || status.StartTime.IsZero() {
		return false
	}
	deadline := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return kl.clock.Since(status.StartTime.Time) >= deadline
}

// applyActiveDeadline fails a pod past its deadline (ShouldEvict), recording the event the
// first time.
func (kl *Kubelet) applyActiveDeadline(pod *v1.Pod, s *v1.PodStatus, old v1.PodStatus) {
	if !kl.pastActiveDeadline(pod) {
		return
	}
	if old.Reason != reasonDeadlineExceeded {
		kl.recorder.Event(pod, v1.EventTypeNormal, reasonDeadlineExceeded, messageDeadlineExceeded)
	}
	s.Phase, s.Reason, s.Message = v1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
}
