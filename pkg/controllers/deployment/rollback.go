package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// This file serves the deprecated rollback annotation (deprecated.deployment.rollback.to:
// extensions/v1beta1's and apps/v1beta1's spec.rollbackTo, as apps/v1 round-trips it).
// Modern `kubectl rollout undo` does not use it: it patches the template of the old
// ReplicaSet into the Deployment itself, and newReplicaSet then finds that ReplicaSet by its
// template and gives it the next revision.

// rollback sets d's template to that of the ReplicaSet of the revision asked for (0: the one
// before the current), and clears the request in any case.
func (c *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(oldRSs, newRS)
	to := *rollbackTo(d)
	if to == 0 {
		if to = lastRevision(allRSs); to == 0 {
			c.event(d, nil, corev1.EventTypeWarning, RollbackRevisionNotFound, "Rollback", "Unable to find last revision.")
			return c.clearRollbackTo(ctx, d)
		}
	}
	for _, rs := range allRSs {
		if v, err := revision(rs.Annotations); err != nil || v != to {
			continue
		}
		rolledBack, err := c.rollbackToTemplate(ctx, d, rs)
		if rolledBack && err == nil {
			c.event(d, rs, corev1.EventTypeNormal, RollbackDone, "Rollback", "Rolled back deployment %q to revision %d", d.Name, to)
		}
		return err
	}
	c.event(d, nil, corev1.EventTypeWarning, RollbackRevisionNotFound, "Rollback", "Unable to find the revision to rollback to.")
	return c.clearRollbackTo(ctx, d)
}

// rollbackToTemplate gives d rs's template (without its hash) and rs's annotations, so that
// the change-cause and such of that revision come back, unless the templates are the same
// already; it reports whether it changed d. The request is cleared either way.
func (c *Controller) rollbackToTemplate(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet) (bool, error) {
	if equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
		klog.FromContext(ctx).V(4).Info("Rolling back to a revision that contains the same template as current deployment, skipping rollback...", "deployment", klog.KObj(d))
		c.event(d, nil, corev1.EventTypeWarning, RollbackTemplateUnchanged, "Rollback", "The rollback revision contains the same template as current deployment %q", d.Name)
		return false, c.clearRollbackTo(ctx, d)
	}
	d.Spec.Template.ObjectMeta = *rs.Spec.Template.ObjectMeta.DeepCopy()
	d.Spec.Template.Spec = *rs.Spec.Template.Spec.DeepCopy()
	d.Spec.Template.Labels = withoutLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	setDeploymentAnnotationsFrom(d, rs)
	return true, c.clearRollbackTo(ctx, d)
}

// clearRollbackTo removes the rollback request from d, writing d (its template too, when
// rollbackToTemplate changed it).
func (c *Controller) clearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, appsv1.DeprecatedRollbackTo)
	if _, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("clearing the rollback request of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}
