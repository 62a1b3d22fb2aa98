package deployment

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"
)

// rolloutRolling takes one step of a RollingUpdate: grow the new ReplicaSet if the surge
// allows; else shrink old ones if availability allows; once complete, clean up the history.
// Each step ends with the status written: the ReplicaSets' next status changes bring the
// next sync.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(slices.Clip(oldRSs), newRS)

	// 1. Scale up, if we can.
	scaledUp, err := c.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	// 2. Scale down, if we can.
	scaledDown, err := c.reconcileOldReplicaSets(ctx, allRSs, filterActive(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	// 3. Done: the history beyond its limit goes.
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// reconcileNewReplicaSet sizes the new ReplicaSet toward d's replicas, as far as maxSurge
// allows (down at once if it has more); it reports whether it changed its size.
func (c *Controller) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if *newRS.Spec.Replicas == *d.Spec.Replicas {
		return false, nil
	}
	if *newRS.Spec.Replicas > *d.Spec.Replicas {
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d, false)
		return scaled, err
	}
	size, err := newRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, size, d, false)
	return scaled, err
}

// reconcileOldReplicaSets shrinks the old ReplicaSets as far as availability allows: first
// their pods that are not available (which costs no availability), then available ones down
// to minAvailable. It reports whether it shrank any. Failures to scale are left to the next
// sync, as upstream's.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	logger := klog.FromContext(ctx)
	maxDown := maxScaledDown(allRSs, oldRSs, newRS, d)
	if maxDown <= 0 {
		return false, nil
	}

	// Unhealthy replicas first, or they would block the rollout until it times out
	// (https://issues.k8s.io/16737).
	oldRSs, cleaned, err := c.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxDown)
	if err != nil {
		logger.V(4).Info("Scaling down unhealthy replicas failed", "deployment", klog.KObj(d), "err", err)
		return false, nil
	}
	scaledDown, err := c.scaleDownOldReplicaSets(ctx, append(slices.Clip(oldRSs), newRS), oldRSs, d)
	if err != nil {
		logger.V(4).Info("Scaling down old replica sets failed", "deployment", klog.KObj(d), "err", err)
		return false, nil
	}
	logger.V(4).Info("Scaled down old RSes", "deployment", klog.KObj(d), "unhealthy", cleaned, "available", scaledDown)
	return cleaned+scaledDown > 0, nil
}

// maxScaledDown is how many old pods may go now: all pods, less the minimum available, less
// the new ReplicaSet's pods not available yet (so that a broken new template does not eat
// into availability step by step). 0 or less: none.
func maxScaledDown(allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if totalReplicas(oldRSs) == 0 {
		return 0
	}
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	return totalReplicas(allRSs) - minAvailable - newUnavailable
}

// unhealthyScaleDown is, for each of oldRSs (sorted oldest first), the size that drops its
// pods that are not available, at most limit in all; the sizes of those left alone unchanged.
func unhealthyScaleDown(oldRSs []*appsv1.ReplicaSet, limit int32) []int32 {
	slices.SortFunc(oldRSs, byCreation)
	sizes := make([]int32, len(oldRSs))
	var total int32
	for i, rs := range oldRSs {
		sizes[i] = *rs.Spec.Replicas
		if total >= limit || *rs.Spec.Replicas == 0 || *rs.Spec.Replicas == rs.Status.AvailableReplicas {
			continue
		}
		down := max(min(limit-total, *rs.Spec.Replicas-rs.Status.AvailableReplicas), 0)
		sizes[i] -= down
		total += down
	}
	return sizes
}

// cleanupUnhealthyReplicas scales oldRSs as unhealthyScaleDown says; it returns them as
// written and how many replicas went.
func (c *Controller) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, limit int32) ([]*appsv1.ReplicaSet, int32, error) {
	sizes := unhealthyScaleDown(oldRSs, limit)
	var total int32
	for i, rs := range oldRSs {
		if sizes[i] == *rs.Spec.Replicas {
			continue
		}
		down := *rs.Spec.Replicas - sizes[i]
		_, updated, err := c.scaleReplicaSet(ctx, rs, sizes[i], d, false)
		if err != nil {
			return nil, total, err
		}
		total += down
		oldRSs[i] = updated
	}
	return oldRSs, total, nil
}

// availableScaleDown is, for each of oldRSs (sorted oldest first), the size that drops the
// available pods beyond minAvailable, the oldest ReplicaSets first.
func availableScaleDown(allRSs, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) []int32 {
	slices.SortFunc(oldRSs, byCreation)
	sizes := make([]int32, len(oldRSs))
	for i, rs := range oldRSs {
		sizes[i] = *rs.Spec.Replicas
	}
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := sumOf(allRSs, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas })
	if available <= minAvailable {
		return sizes
	}
	want := available - minAvailable
	var total int32
	for i, rs := range oldRSs {
		if total >= want {
			break
		}
		down := min(*rs.Spec.Replicas, want-total)
		sizes[i] -= down
		total += down
	}
	return sizes
}

// scaleDownOldReplicaSets scales oldRSs as availableScaleDown says; it returns how many
// replicas went.
func (c *Controller) scaleDownOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	sizes := availableScaleDown(allRSs, oldRSs, d)
	var total int32
	for i, rs := range oldRSs {
		if sizes[i] == *rs.Spec.Replicas {
			continue
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[i], d, false); err != nil {
			return total, err
		}
		total += *rs.Spec.Replicas - sizes[i]
	}
	return total, nil
}

// syncRolloutStatus writes d's status during a rollout (rolloutStatus) if it changed. When it
// did not, and the rollout is still under way, d is queued again for when its progress
// deadline passes, so that the timeout is noticed without any other event.
func (c *Controller) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	now := c.clock.Now()
	status := rolloutStatus(allRSs, newRS, d, now)
	if !reflect.DeepEqual(d.Status, status) {
		d.Status = status
		return c.updateStatus(ctx, d)
	}
	if after, ok := progressCheckAfter(d, status, now); ok {
		// Within a second: at once, rate-limited, to stay on the safe side. Otherwise a
		// second late, against the clocks' skew in AddAfter.
		if after < time.Second {
			c.queue.AddRateLimited(fmt.Sprintf("%s/%s", d.Namespace, d.Name))
		} else {
			klog.FromContext(ctx).V(4).Info("Queueing up deployment for a progress check", "deployment", klog.KObj(d), "queueAfter", int(after.Seconds()))
			c.enqueueAfter(d, after+time.Second)
		}
	}
	return nil
}
