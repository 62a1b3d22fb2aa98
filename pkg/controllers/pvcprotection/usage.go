package pvcprotection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Finalizer is what the API server's StorageObjectInUseProtection admission puts on every
// claim, and what this controller removes once no pod uses the claim.
const Finalizer = "kubernetes.io/pvc-protection"

// action is what a sync does to one claim.
type action int

const (
	// keep: the claim is not being deleted with the finalizer, or has it already.
	keep action = iota
	// checkUse: the claim is being deleted and still has the finalizer; it loses the
	// finalizer if no pod uses it.
	checkUse
	// addFinalizer: a live claim without the finalizer (one created while admission did not
	// add it) gets it, as upstream.
	addFinalizer
)

// decide is the action on pvc, from the claim alone.
func decide(pvc *corev1.PersistentVolumeClaim) action {
	has := slices.Contains(pvc.Finalizers, Finalizer)
	switch {
	case pvc.DeletionTimestamp != nil && has:
		return checkUse
	case pvc.DeletionTimestamp == nil && !has:
		return addFinalizer
	}
	return keep
}

// claimNames are the claims pod's volumes name, directly or as generic ephemeral volumes
// ("<pod>-<volume>"), in pod's namespace.
func claimNames(pod *corev1.Pod) []string {
	var names []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, ephemeral.VolumeClaimName(pod, v))
		}
	}
	return names
}

// podUsesClaim reports whether pod keeps pvc from going, as upstream decides it for deletion:
//
//   - only a scheduled pod counts: a node agent sees a pod only once it is scheduled, and none
//     starts a pod whose claim is being deleted;
//   - a volume naming the claim counts for as long as the pod exists, finished or not (its
//     node may still be unmounting it);
//   - a generic ephemeral volume counts if the claim is the one made for this pod (the pod is
//     its controller) and the pod is not shut down: one deleted with no grace period has been
//     let go by its node, or force-deleted, and waiting for it could deadlock a pod finalizer
//     that waits for the claim.
func podUsesClaim(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	if pod.Namespace != pvc.Namespace || pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			return true
		}
		if v.Ephemeral != nil && !podIsShutDown(pod) &&
			ephemeral.VolumeClaimName(pod, v) == pvc.Name && ephemeral.VolumeIsForPod(pod, pvc) == nil {
			return true
		}
	}
	return false
}

// podIsShutDown reports whether pod was deleted with a zero grace period: its node agent is
// done with it, or it was force-deleted.
func podIsShutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// mayFreeClaims reports whether an event on pod can let a claim go, so that its claims are
// worth a sync: the pod was deleted, has terminated, or is not scheduled. A running scheduled
// pod holds its claims, and the sync of a claim being deleted finds it without an event.
func mayFreeClaims(pod *corev1.Pod, deleted bool) bool {
	return deleted || podTerminated(pod) || pod.Spec.NodeName == ""
}

// podTerminated is upstream's volume util IsPodTerminated: the pod finished, or is being
// deleted and none of its containers runs.
func podTerminated(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated == nil && s.State.Waiting == nil {
			return false
		}
	}
	return true
}
