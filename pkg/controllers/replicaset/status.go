package replicaset

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

// Upstream's reasons of the ReplicaFailure condition: the pod writes failed.
const (
	reasonFailedCreate = podcontrol.FailedCreatePodReason
	reasonFailedDelete = podcontrol.FailedDeletePodReason
)

// calculateStatus is rs's status from the pods it owns, as upstream's calculateStatus:
// replicas counts the active pods; fullyLabeledReplicas those whose labels also match the
// template's; readyReplicas the ready; availableReplicas those ready for minReadySeconds at
// now; terminatingReplicas (when the kind has it) those being deleted. A failed manage
// (manageErr) sets the ReplicaFailure condition, with FailedCreate or FailedDelete by which
// way the count was off, and a manage that succeeded clears it.
func calculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, withTerminating bool, now time.Time) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fullyLabeled, ready, available int32
	for _, p := range active {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fullyLabeled++
		}
		if podcontrol.IsPodReady(p) {
			ready++
			if podcontrol.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}

	failure := replicaFailure(rs.Status)
	switch {
	case manageErr != nil && failure == nil:
		var reason string
		switch diff := len(active) - int(*rs.Spec.Replicas); {
		case diff < 0:
			reason = reasonFailedCreate
		case diff > 0:
			reason = reasonFailedDelete
		}
		status.Conditions = append(withoutReplicaFailure(status.Conditions), appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		status.Conditions = withoutReplicaFailure(status.Conditions)
	}

	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = nil
	if withTerminating {
		n := int32(len(terminating))
		status.TerminatingReplicas = &n
	}
	return status
}

func replicaFailure(status appsv1.ReplicaSetStatus) *appsv1.ReplicaSetCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure {
			return &status.Conditions[i]
		}
	}
	return nil
}

func withoutReplicaFailure(conditions []appsv1.ReplicaSetCondition) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	for _, c := range conditions {
		if c.Type != appsv1.ReplicaSetReplicaFailure {
			out = append(out, c)
		}
	}
	return out
}

// statusUnchanged reports whether writing status would change nothing: the counts and
// conditions are the stored ones and the stored status has seen rs's generation (upstream
// then skips the write).
func statusUnchanged(rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) bool {
	old := rs.Status
	return old.Replicas == status.Replicas &&
		old.FullyLabeledReplicas == status.FullyLabeledReplicas &&
		old.ReadyReplicas == status.ReadyReplicas &&
		old.AvailableReplicas == status.AvailableReplicas &&
		equalInt32(old.TerminatingReplicas, status.TerminatingReplicas) &&
		rs.Generation == old.ObservedGeneration &&
		equalConditions(old.Conditions, status.Conditions)
}

func equalInt32(a, b *int32) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func equalConditions(a, b []appsv1.ReplicaSetCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || a[i].Reason != b[i].Reason ||
			a[i].Message != b[i].Message || !a[i].LastTransitionTime.Equal(&b[i].LastTransitionTime) {
			return false
		}
	}
	return true
}

// podsToDelete picks diff of active to delete, as upstream's getPodsToDelete: all of them
// if diff covers them, else the first diff in podcontrol.ActivePodsWithRanks order, each
// ranked by how many active pods of related (the pods of every ReplicaSet of the same
// Deployment) share its node, so that a scale-down evens the spread across nodes. active
// is not changed.
func podsToDelete(active, related []*corev1.Pod, diff int, now time.Time) []*corev1.Pod {
	pods := append([]*corev1.Pod{}, active...)
	if diff >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if podcontrol.IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranks := make([]int, len(pods))
	for i, p := range pods {
		ranks[i] = onNode[p.Spec.NodeName]
	}
	sort.Sort(podcontrol.ActivePodsWithRanks{Pods: pods, Rank: ranks, Now: metav1.NewTime(now)})
	return pods[:diff]
}
