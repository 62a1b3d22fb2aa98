package deployment

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rolloutRecreate takes one step of a Recreate rollout: the old ReplicaSets to zero; once
// none of their pods runs, the new ReplicaSet (created only then, so that old and new pods
// never run together) to full size; once complete, the history cleaned up.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := append(slices.Clip(oldRSs), newRS)

	// 1. The old ReplicaSets to zero.
	scaledDown := false
	for _, rs := range filterActive(oldRSs) {
		scaled, _, err := c.scaleReplicaSet(ctx, rs, 0, d, false)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	// 2. Wait until no old pod runs; a pod's deletion queues d again.
	pods, err := c.podsByReplicaSet(d, rsList)
	if err != nil {
		return err
	}
	if oldPodsRunning(newRS, oldRSs, pods) {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}

	// 3. The new ReplicaSet, at full size.
	if newRS == nil {
		if newRS, oldRSs, err = c.replicaSetsAndSyncRevision(ctx, d, rsList, true); err != nil {
			return err
		}
		allRSs = append(slices.Clip(oldRSs), newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d, false); err != nil {
		return err
	}

	// 4. Done: the history beyond its limit goes.
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// oldPodsRunning reports whether an old ReplicaSet still reports pods, or one of its pods in
// pods (by ReplicaSet UID) is not in a terminal phase (Unknown counts as running: it may be).
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) bool {
	if sumOf(oldRSs, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas }) > 0 {
		return true
	}
	for uid, list := range pods {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, pod := range list {
			if pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
