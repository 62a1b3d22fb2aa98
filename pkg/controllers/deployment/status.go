package deployment

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file computes a deployment's status from its ReplicaSets: the counts, the Available
// condition, and the Progressing condition that `kubectl rollout status` waits on. All of it
// is pure; now is the controller's clock.

// The reasons of the deployment conditions, as upstream.
const (
	// Progressing.
	ReplicaSetUpdatedReason = "ReplicaSetUpdated"
	FailedRSCreateReason    = "ReplicaSetCreateError"
	NewReplicaSetReason     = "NewReplicaSetCreated"
	FoundNewRSReason        = "FoundNewReplicaSet"
	NewRSAvailableReason    = "NewReplicaSetAvailable"
	TimedOutReason          = "ProgressDeadlineExceeded"
	PausedDeployReason      = "DeploymentPaused"
	ResumedDeployReason     = "DeploymentResumed"
	// Available.
	MinimumReplicasAvailable   = "MinimumReplicasAvailable"
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

func newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: status, LastUpdateTime: ts, LastTransitionTime: ts, Reason: reason, Message: message}
}

// getCondition is a copy of status's condition of type t, or nil.
func getCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for _, c := range status.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// setCondition puts c into status, in place of the condition of its type; nothing changes
// when that one has c's status and reason already, and a condition whose status stays keeps
// its transition time.
func setCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(status, c.Type)
	status.Conditions = append(status.Conditions, c)
}

func removeCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range status.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	status.Conditions = kept
}

// calculateStatus is d's status from its ReplicaSets: the counts summed over them (updated:
// the new one's), observedGeneration d's generation, and the Available condition: true while
// at most maxUnavailable replicas are missing.
func calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	available := sumOf(allRSs, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas })
	// More available than wanted (scaling down) is not negative unavailability.
	unavailable := max(totalReplicas(allRSs)-available, 0)
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumOf(allRSs, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas }),
		UpdatedReplicas:     sumOf([]*appsv1.ReplicaSet{newRS}, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas }),
		ReadyReplicas:       sumOf(allRSs, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.ReadyReplicas }),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		TerminatingReplicas: terminatingReplicas(allRSs),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, MinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return status
}

// terminatingReplicas sums the ReplicaSets' terminating pods (DeploymentReplicaSetTerminatingReplicas,
// beta and on in 1.37). ReplicaSets never synced count nothing; when one synced by a
// controller that does not report the count, there is no sum.
func terminatingReplicas(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.ObservedGeneration == 0 && rs.Status.TerminatingReplicas == nil:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

// rolloutStatus is d's status during a rollout: calculateStatus's, with the Progressing
// condition moved on (when d has a progress deadline and the rollout is not already complete)
// and the ReplicaSets' ReplicaFailure surfaced. Upstream's syncRolloutStatus without the write.
func rolloutStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	status := calculateStatus(allRSs, newRS, d, now)
	if !hasProgressDeadline(d) {
		removeCondition(&status, appsv1.DeploymentProgressing)
	}

	// A resync of a finished rollout estimates no progress.
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	complete := status.Replicas == status.UpdatedReplicas && cur != nil && cur.Reason == NewRSAvailableReason
	if hasProgressDeadline(d) && !complete {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case deploymentComplete(d, &status):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSAvailableReason,
				subject+" has successfully progressed.", now))
		case deploymentProgressing(d, &status):
			// Progress refreshes lastUpdateTime even under the same reason, which
			// setCondition would not do; a true condition keeps its transition time.
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReplicaSetUpdatedReason, subject+" is progressing.", now)
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&status, appsv1.DeploymentProgressing)
			}
			setCondition(&status, c)
		case deploymentTimedOut(d, &status, now):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, TimedOutReason,
				subject+" has timed out progressing.", now))
		}
	}

	if failure := replicaFailure(allRSs, newRS); failure != nil {
		setCondition(&status, *failure)
	} else {
		removeCondition(&status, appsv1.DeploymentReplicaFailure)
	}
	return status
}

// replicaFailure is the ReplicaFailure condition of the new ReplicaSet, else of the first
// old one that has one, as a deployment condition; nil when none has.
func replicaFailure(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, allRSs...) {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{
					Type:               appsv1.DeploymentReplicaFailure,
					Status:             c.Status,
					LastTransitionTime: c.LastTransitionTime,
					LastUpdateTime:     c.LastTransitionTime,
					Reason:             c.Reason,
					Message:            c.Message,
				}
			}
		}
	}
	return nil
}

// deploymentComplete reports whether all of d's replicas are updated and available, no old
// pod runs, and status is of d's current generation.
func deploymentComplete(d *appsv1.Deployment, status *appsv1.DeploymentStatus) bool {
	return status.UpdatedReplicas == *d.Spec.Replicas &&
		status.Replicas == *d.Spec.Replicas &&
		status.AvailableReplicas == *d.Spec.Replicas &&
		status.ObservedGeneration >= d.Generation
}

// deploymentProgressing reports whether status shows progress over d's current status: more
// updated, ready or available pods, or fewer old ones.
func deploymentProgressing(d *appsv1.Deployment, status *appsv1.DeploymentStatus) bool {
	old := d.Status
	return status.UpdatedReplicas > old.UpdatedReplicas ||
		status.Replicas-status.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		status.ReadyReplicas > old.ReadyReplicas ||
		status.AvailableReplicas > old.AvailableReplicas
}

// deploymentTimedOut reports whether d's Progressing condition in status says it timed out,
// or was last updated longer than progressDeadlineSeconds before now. A finished rollout
// never times out: a new ReplicaSet's event may come before the condition saying so.
func deploymentTimedOut(d *appsv1.Deployment, status *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(*status, appsv1.DeploymentProgressing)
	switch {
	case c == nil, c.Reason == NewRSAvailableReason:
		return false
	case c.Reason == TimedOutReason:
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// progressCheckAfter is when d, whose status was found unchanged at newStatus, must be
// synced again to see whether it timed out: when its progress deadline passes (from the
// Progressing condition's last update). ok is false when no check is due: no deadline or
// condition, or a rollout complete or already timed out.
func progressCheckAfter(d *appsv1.Deployment, newStatus appsv1.DeploymentStatus, now time.Time) (after time.Duration, ok bool) {
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil {
		return 0, false
	}
	if deploymentComplete(d, &newStatus) || cur.Reason == TimedOutReason {
		return 0, false
	}
	return cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now), true
}

// pausedCondition moves d's Progressing condition to DeploymentPaused when d is paused and
// to DeploymentResumed when it no longer is, so that the time spent paused does not count
// against the progress deadline; it reports whether status changed. A timed-out
// condition stays.
func pausedCondition(d *appsv1.Deployment, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(d.Status, appsv1.DeploymentProgressing)
	if c != nil && c.Reason == TimedOutReason {
		return false
	}
	paused := c != nil && c.Reason == PausedDeployReason
	switch {
	case d.Spec.Paused && !paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedDeployReason, "Deployment is paused", now))
	case !d.Spec.Paused && paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ResumedDeployReason, "Deployment is resumed", now))
	default:
		return false
	}
	return true
}
