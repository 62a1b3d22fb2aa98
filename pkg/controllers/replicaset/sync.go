package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// sync reconciles one owner, in the steps of the package doc.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queues: nothing to retry
	}
	rs, err := c.kind.get(namespace, name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("Owner deleted", "kind", c.kindName(), "key", key)
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s from the cache: %w", c.kindName(), key, err)
	}
	rs = rs.DeepCopy()

	// 1. Expectations first, before the pods are listed: a pod observed after the list but
	// before the check would otherwise be missed by both.
	mayManage := c.expectations.Satisfied(key) && rs.DeletionTimestamp == nil
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// Validation refuses such a selector; retrying would not help.
		utilruntime.HandleErrorWithContext(ctx, err, "Converting the pod selector failed", "kind", c.kindName(), "key", key)
		return nil
	}

	// 2. The pods: those it owns and the orphans it may adopt.
	all, err := c.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing the pods of %s %s: %w", c.kindName(), key, err)
	}
	var candidates []*corev1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOfNoCopy(p); ref == nil || ref.UID == rs.UID {
			candidates = append(candidates, p)
		}
	}
	active, err := c.claim(ctx, rs, selector, podcontrol.FilterActivePods(candidates))
	if err != nil {
		return err
	}
	var terminating []*corev1.Pod
	if c.kind.terminatingReplicas() {
		for _, p := range podcontrol.FilterTerminatingPods(candidates) {
			if metav1.IsControlledBy(p, rs) && selector.Matches(labels.Set(p.Labels)) {
				terminating = append(terminating, p)
			}
		}
	}

	// 3. Create or delete.
	var manageErr error
	if mayManage {
		manageErr = c.manageReplicas(ctx, active, rs)
	}

	// 4. Status, computed at one instant shared with the availability requeue.
	now := c.clock.Now()
	status := calculateStatus(rs, active, terminating, manageErr, c.kind.terminatingReplicas(), now)
	updated, err := c.updateStatus(ctx, rs, status)
	if err != nil {
		return errors.Join(err, manageErr)
	}
	if manageErr != nil {
		return manageErr
	}

	// 5. Look again when the next ready pod becomes available: no event tells of that.
	if updated.Spec.MinReadySeconds > 0 && updated.Status.ReadyReplicas != updated.Status.AvailableReplicas {
		next := time.Duration(updated.Spec.MinReadySeconds) * time.Second
		if check := podcontrol.NextAvailabilityCheck(active, updated.Spec.MinReadySeconds, now, c.clock); check != nil {
			next = *check
		}
		c.queue.AddAfter(key, next)
	}
	return nil
}

// claim adopts and releases rs's pods, re-reading rs uncached before the first adoption.
func (c *Controller) claim(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	owner := controllerref.Owner{
		Object:   rs,
		Kind:     c.kind.gvk(),
		Selector: selector,
		CanAdopt: controllerref.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
			fresh, err := c.kind.getLive(ctx, rs.Namespace, rs.Name)
			if err != nil {
				return nil, err
			}
			if fresh.UID != rs.UID {
				return nil, fmt.Errorf("original %v %v/%v is gone: got uid %v, wanted %v", c.kindName(), rs.Namespace, rs.Name, fresh.UID, rs.UID)
			}
			return fresh, nil
		}),
	}
	return controllerref.ClaimPods(ctx, owner, pods, c.podControl)
}

// manageReplicas creates or deletes pods until rs has its replicas active, at most
// burstReplicas in one sync, recording each write in the expectations first.
func (c *Controller) manageReplicas(ctx context.Context, active []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	logger := klog.FromContext(ctx)
	key := keyOf(rs)
	diff := len(active) - int(*rs.Spec.Replicas)
	switch {
	case diff < 0:
		n := min(-diff, c.burstReplicas)
		// Creations are counted, not tracked by UID: the UID is known only once the create
		// returned, and the pod may be observed before that.
		c.expectations.ExpectCreations(key, n)
		logger.V(2).Info("Too few replicas", "kind", c.kindName(), "owner", klog.KObj(rs), "need", *rs.Spec.Replicas, "creating", n)
		ref := controllerref.NewRef(rs, c.kind.gvk())
		owner := c.kind.original(rs)
		created, err := podcontrol.SlowStartBatch(ctx, n, podcontrol.SlowStartInitialBatchSize, func() error {
			err := c.podControl.CreatePod(ctx, podcontrol.PodFromTemplate(&rs.Spec.Template, rs, ref), owner)
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // every create would fail; the namespace's deletion removes rs too
			}
			return err
		})
		// The creates skipped after a failed batch, and those that failed, will never be
		// observed; the next sync retries them.
		if skipped := n - created; skipped > 0 {
			logger.V(2).Info("Slow-start failure. Skipping creation of pods, decrementing expectations",
				"podsSkipped", skipped, "kind", c.kindName(), "owner", klog.KObj(rs))
			c.expectations.LowerCreations(key, skipped)
		}
		return err

	case diff > 0:
		n := min(diff, c.burstReplicas)
		logger.V(2).Info("Too many replicas", "kind", c.kindName(), "owner", klog.KObj(rs), "need", *rs.Spec.Replicas, "deleting", n)
		victims := podsToDelete(active, c.relatedPods(ctx, rs), n, c.clock.Now())
		// Tracked by UID: a pod marked for deletion and then removed is observed once.
		c.expectations.ExpectDeletions(key, podUIDs(victims))
		owner := c.kind.original(rs)
		errs := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, pod := range victims {
			wg.Go(func() {
				// Outside the worker's panic boundary: a panic is this deletion's error.
				err := recovery.Sync(ctx, c.name, func() error { return c.podControl.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID, owner) })
				if err == nil {
					return
				}
				// This deletion will not be observed.
				c.expectations.DeletionObserved(key, pod.UID)
				if !apierrors.IsNotFound(err) {
					logger.V(2).Info("Failed to delete pod, decremented expectations", "pod", klog.KObj(pod), "kind", c.kindName(), "owner", klog.KObj(rs))
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		// The failures are evented already and likely alike: the first one stands for all.
		return <-errs
	}
	return nil
}

// relatedPods are the pods of every owner with rs's controller (the ReplicaSets of one
// Deployment), each once; the deletion ranking counts them per node. An owner without a
// controller has none, as upstream.
func (c *Controller) relatedPods(ctx context.Context, rs *appsv1.ReplicaSet) []*corev1.Pod {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil {
		return nil
	}
	seen := map[string]bool{}
	var related []*corev1.Pod
	for _, other := range c.kind.controlledBy(rs.Namespace, string(ref.UID)) {
		selector, err := metav1.LabelSelectorAsSelector(other.Spec.Selector)
		if err != nil {
			continue // an invalid selector matches no pods
		}
		pods, err := c.pods.Pods(other.Namespace).List(selector)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Listing related pods failed", "owner", klog.KObj(other))
			continue
		}
		for _, p := range pods {
			if !seen[string(p.UID)] {
				seen[string(p.UID)] = true
				related = append(related, p)
			}
		}
	}
	return related
}

// updateStatus writes status unless nothing changed, with the generation it was computed
// for, retrying once on a fresh read (upstream's statusUpdateRetries).
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if statusUnchanged(rs, status) {
		return rs, nil
	}
	// The generation acted on, not a later one a retry reads.
	status.ObservedGeneration = rs.Generation
	logger := klog.FromContext(ctx)
	current := rs
	for attempt := 0; ; attempt++ {
		logger.V(4).Info("Updating status", "kind", c.kindName(), "owner", klog.KObj(rs),
			"replicas", status.Replicas, "need", *rs.Spec.Replicas, "fullyLabeledReplicas", status.FullyLabeledReplicas,
			"readyReplicas", status.ReadyReplicas, "availableReplicas", status.AvailableReplicas,
			"observedGeneration", status.ObservedGeneration)
		next := current.DeepCopy()
		next.Status = status
		updated, err := c.kind.updateStatus(ctx, next)
		if err == nil {
			return updated, nil
		}
		if attempt >= 1 {
			return nil, fmt.Errorf("updating the status of %s %s/%s: %w", c.kindName(), rs.Namespace, rs.Name, err)
		}
		if current, err = c.kind.getLive(ctx, rs.Namespace, rs.Name); err != nil {
			return nil, fmt.Errorf("re-reading %s %s/%s to update its status: %w", c.kindName(), rs.Namespace, rs.Name, err)
		}
	}
}
