package deployment

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/history"
)

// This file is what every kind of sync shares: finding (or creating) the new ReplicaSet and
// keeping revisions, scaling a ReplicaSet, proportional scaling, the history clean-up and
// the status write.

// errHashCollision is a new ReplicaSet's name taken by a ReplicaSet of another template (or
// owner): the collision count went up, and the next sync tries the next name.
var errHashCollision = errors.New("hash collision")

// syncStatusOnly writes d's status and changes nothing else (d is being deleted).
func (c *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// sync handles a scaling event and a paused Deployment: the ReplicaSets resized, no rollout
// step taken; a paused one is cleaned up too.
func (c *Controller) sync(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused && rollbackTo(d) == nil {
		if err := c.cleanup(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// replicaSetsAndSyncRevision is d's new ReplicaSet (created when create is set and there is
// none; else nil) and its old ones, the new one's revision brought up to date.
func (c *Controller) replicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	oldRSs := findOldReplicaSets(d, rsList)
	newRS, err := c.newReplicaSet(ctx, d, rsList, oldRSs, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

// newReplicaSet finds d's new ReplicaSet and gives it the revision after the old ones'
// highest (with d's annotations and minReadySeconds), and d that revision; or, when there is
// none and create is set, creates it with the replicas the strategy allows now.
func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	logger := klog.FromContext(ctx)
	newRevision := maxRevision(oldRSs) + 1

	if existing := findNewReplicaSet(d, rsList); existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, rs, newRevision, true)
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			// The Deployment's revision follows on the sync this update's event brings.
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("updating the revision of replica set %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			updated = withReplicas(updated)
			// Later steps of this sync start from what was written, not the cache.
			rsList[slices.Index(rsList, existing)] = updated
			return updated, nil
		}
		needsUpdate := setDeploymentRevision(d, rs.Annotations[RevisionAnnotation])
		// Progress of a Deployment that had no condition yet counts from when its new
		// ReplicaSet was first seen.
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, FoundNewRSReason,
				fmt.Sprintf("Found new replica set %q", rs.Name), c.clock.Now()))
			needsUpdate = true
		}
		if needsUpdate {
			if err := c.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	// None: create it, under the name its hash gives.
	template := *d.Spec.Template.DeepCopy()
	hash := history.ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            replicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32(0)),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selectorWithLabel(d.Spec.Selector, appsv1.DefaultDeploymentUniqueLabelKey, hash),
			Template:        template,
		},
	}
	replicas, err := newRSNewReplicas(d, append(slices.Clip(oldRSs), rs), rs)
	if err != nil {
		return nil, err
	}
	*rs.Spec.Replicas = replicas
	setNewReplicaSetAnnotations(d, rs, newRevision, false)

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		// A slow cache, or a hash collision: the ReplicaSet of that name is ours for this
		// template, or the collision count goes up and the next sync tries another name.
		alreadyExists = true
		found, getErr := c.replicaSets.ReplicaSets(rs.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, fmt.Errorf("getting replica set %s/%s that already exists: %w", rs.Namespace, rs.Name, getErr)
		}
		if ref := metav1.GetControllerOfNoCopy(found); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &found.Spec.Template) {
			created = withReplicas(found)
			break
		}
		before := int32(0)
		if d.Status.CollisionCount != nil {
			before = *d.Status.CollisionCount
		}
		d.Status.CollisionCount = new(before + 1)
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
		logger.V(2).Info("Found a hash collision for deployment - bumping collisionCount to resolve it",
			"deployment", klog.KObj(d), "oldCollisionCount", before, "newCollisionCount", before+1)
		return nil, fmt.Errorf("replica set %s/%s: %w", rs.Namespace, rs.Name, errHashCollision)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err // every create will fail; the namespace's deletion takes care of the rest
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, FailedRSCreateReason, msg, c.clock.Now()))
			// The create's failure is the one to report.
			_ = c.updateStatus(ctx, d)
		}
		c.event(d, nil, corev1.EventTypeWarning, FailedRSCreateReason, "Create", "%s", msg)
		return nil, fmt.Errorf("creating replica set %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if !alreadyExists && replicas > 0 {
		c.event(d, created, corev1.EventTypeNormal, ScalingReplicaSetReason, "Scale", "Scaled up replica set %s from 0 to %d", created.Name, replicas)
	}

	needsUpdate := setDeploymentRevision(d, strconv.FormatInt(newRevision, 10))
	if !alreadyExists && hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewReplicaSetReason,
			fmt.Sprintf("Created new replica set %q", created.Name), c.clock.Now()))
		needsUpdate = true
	}
	if needsUpdate {
		if err := c.updateStatus(ctx, d); err != nil {
			return created, err
		}
	}
	return created, nil
}

// withReplicas is rs with spec.replicas set (the API server's default, 1, when absent).
func withReplicas(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if rs.Spec.Replicas != nil {
		return rs
	}
	rs = rs.DeepCopy()
	rs.Spec.Replicas = new(int32(1))
	return rs
}

// scale resizes d's ReplicaSets to d's replicas: the one active (or latest) ReplicaSet alone;
// the old ones to zero once the new one is saturated; otherwise, during a rolling update,
// every active one in proportion (proportionalSizes), so that a scaling event neither hastens
// nor slows the rollout.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if rs := findActiveOrLatest(newRS, oldRSs); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, _, err := c.scaleReplicaSet(ctx, rs, *d.Spec.Replicas, d, false)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range filterActive(oldRSs) {
			if _, _, err := c.scaleReplicaSet(ctx, old, 0, d, false); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	rss, sizes := proportionalSizes(d, newRS, oldRSs)
	for i, rs := range rss {
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[i], d, true); err != nil {
			return err // the sync is retried
		}
	}
	return nil
}

// scaleReplicaSet sets rs's replicas to size and its replicas annotations to d's, writing
// only when the size changes or, with force, when the annotations do; it reports whether the
// size changed, with a ScalingReplicaSet event, and returns rs as written.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment, force bool) (bool, *appsv1.ReplicaSet, error) {
	from := *rs.Spec.Replicas
	if !force && from == size {
		return false, rs, nil
	}
	desired, maxReplicas := *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)
	if from == size && !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false, rs, nil
	}
	rsCopy := rs.DeepCopy()
	*rsCopy.Spec.Replicas = size
	setReplicasAnnotations(rsCopy, desired, maxReplicas)
	updated, err := c.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, fmt.Errorf("scaling replica set %s/%s from %d to %d: %w", rs.Namespace, rs.Name, from, size, err)
	}
	updated = withReplicas(updated)
	if from == size {
		return false, updated, nil
	}
	direction := "up"
	if size < from {
		direction = "down"
	}
	c.event(d, updated, corev1.EventTypeNormal, ScalingReplicaSetReason, "Scale", "Scaled %s replica set %s from %d to %d", direction, updated.Name, from, size)
	return true, updated, nil
}

// cleanup deletes d's oldest old ReplicaSets beyond revisionHistoryLimit, skipping those
// that still have (or are to have) pods, or whose controller has not caught up.
func (c *Controller) cleanup(ctx context.Context, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) error {
	for _, rs := range historyToDelete(d, oldRSs) {
		klog.FromContext(ctx).V(4).Info("Trying to cleanup replica set for deployment", "replicaSet", klog.KObj(rs), "deployment", klog.KObj(d))
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			// Stop at the first failure rather than press an overloaded API server.
			return fmt.Errorf("deleting old replica set %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

// historyToDelete is which of oldRSs the revision history limit lets go: the lowest
// revisions beyond the limit among those not being deleted, but only those scaled to zero
// with no pods left and observed by the ReplicaSet controller.
func historyToDelete(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	excess := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if excess <= 0 {
		return nil
	}
	slices.SortFunc(alive, byRevision)
	var out []*appsv1.ReplicaSet
	for _, rs := range alive[:excess] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		out = append(out, rs)
	}
	return out
}

// syncStatus writes d's status as calculateStatus has it, if it changed.
func (c *Controller) syncStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	status := calculateStatus(allRSs, newRS, d, c.clock.Now())
	if reflect.DeepEqual(d.Status, status) {
		return nil
	}
	d.Status = status
	return c.updateStatus(ctx, d)
}

// updateStatus writes d's status (and, as the deployments/status subresource allows, its
// annotations: the revision), and takes the new resource version, so that a second write
// in the same sync does not conflict with the first.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating the status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

// isScalingEvent reports whether d's replicas changed since its active ReplicaSets were sized
// (their desired-replicas annotation).
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range filterActive(append(oldRSs, newRS)) {
		if desired, ok := replicasAnnotation(rs, DesiredReplicasAnnotation); ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}
