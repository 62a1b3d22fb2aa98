package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// trackStatus counts the finished pods and finishes the Job, in the order that loses
// nothing:
//
//  1. finished pods' UIDs go to status.uncountedTerminatedPods (Indexed: their indexes to
//     completedIndexes), with an interim FailureTarget or SuccessCriteriaMet condition;
//     written;
//  2. their finalizers are removed;
//  3. the UIDs whose finalizer is gone move to status.succeeded / failed;
//  4. with nothing left uncounted or terminating, the Complete or Failed condition;
//     written.
//
// At most maxUncountedPods pods are taken per sync; the status write queues the next.
func (c *Controller) trackStatus(ctx context.Context, s *syncState, needsFlush bool) error {
	logger := klog.FromContext(ctx)
	job := s.job
	indexed := isIndexed(job)
	if indexed {
		sortByIndex(s.pods) // completed indexes are added in order
	}
	withFinalizer := sets.New[types.UID]()
	for _, p := range s.pods {
		if hasTrackingFinalizer(p) && !s.expectedRemovals.Has(p.UID) {
			withFinalizer.Insert(p.UID)
		}
	}
	if countRemoved(&job.Status, withFinalizer) {
		needsFlush = true
	}

	// 1. Record the finished pods as uncounted.
	var (
		rmFinalizer    []*corev1.Pod
		newIndexes     []int
		reachedMax     bool
		uncountedState = job.Status.UncountedTerminatedPods
	)
	for _, pod := range s.pods {
		if !hasTrackingFinalizer(pod) || s.expectedRemovals.Has(pod.UID) {
			continue // counted by an earlier sync
		}
		failed := isPodFailed(pod, job)
		if !c.canRemoveFinalizer(logger, s, pod, failed) {
			continue
		}
		rmFinalizer = append(rmFinalizer, pod)
		switch {
		case pod.Status.Phase == corev1.PodSucceeded && !s.uncounted.failed.Has(pod.UID):
			if indexed {
				// The index is enough to not count a success twice.
				if ix := completionIndex(pod); validIndex(job, pod) && !s.prevSucceededIndexes.has(ix) {
					newIndexes = append(newIndexes, ix)
					needsFlush = true
				}
			} else if !s.uncounted.succeeded.Has(pod.UID) {
				uncountedState.Succeeded = append(uncountedState.Succeeded, pod.UID)
				needsFlush = true
			}
		case failed || (s.finished != nil && s.finished.Type != batchv1.JobSuccessCriteriaMet):
			// A failing Job counts every pod it has not seen succeed as failed.
			if !s.uncounted.failed.Has(pod.UID) && (!indexed || validIndex(job, pod)) {
				if job.Spec.PodFailurePolicy == nil || matchPodFailurePolicy(job.Spec.PodFailurePolicy, pod).count {
					uncountedState.Failed = append(uncountedState.Failed, pod.UID)
					needsFlush = true
				}
			}
		}
		if len(newIndexes)+len(uncountedState.Succeeded)+len(uncountedState.Failed) >= maxUncountedPods {
			reachedMax = true
			break
		}
	}
	if indexed {
		s.succeededIndexes = s.succeededIndexes.withIndexes(newIndexes)
		if text := s.succeededIndexes.String(); text != job.Status.CompletedIndexes {
			job.Status.CompletedIndexes = text
			needsFlush = true
		}
		job.Status.Succeeded = int32(s.succeededIndexes.total())
		var failedText *string
		if s.failedIndexes != nil {
			failedText = ptr.To(s.failedIndexes.String())
		}
		if !ptr.Equal(job.Status.FailedIndexes, failedText) {
			job.Status.FailedIndexes = failedText
			needsFlush = true
		}
	}
	// The interim condition is written before any finalizer goes; the final one is prepared.
	now := c.clock.Now()
	if s.finished != nil && s.finished.Type == batchv1.JobFailureTarget {
		job.Status.Conditions = append(job.Status.Conditions, *s.finished)
		needsFlush = true
		s.finished = newCondition(batchv1.JobFailed, corev1.ConditionTrue, s.finished.Reason, s.finished.Message, now)
	}
	if s.finished != nil && s.finished.Type == batchv1.JobSuccessCriteriaMet && s.finished.Status == corev1.ConditionTrue {
		if hasTrueCondition(job, batchv1.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *s.finished)
			needsFlush = true
		}
		s.finished = newCondition(batchv1.JobComplete, corev1.ConditionTrue, s.finished.Reason, s.finished.Message, now)
	}

	// 2, 3. Write, remove the finalizers, count.
	needsFlush, err := c.flushAndRemoveFinalizers(ctx, s, rmFinalizer, withFinalizer, needsFlush)
	if err != nil {
		return err
	}

	// 4. Finish.
	finished := !reachedMax && c.enactFinished(logger, s)
	if finished {
		needsFlush = true
	}
	if !needsFlush {
		return nil
	}
	updated, err := c.updateStatus(ctx, s.job)
	if err != nil {
		return fmt.Errorf("removing uncounted pods from status: %w", err)
	}
	s.job = updated
	if finished {
		c.recordFinished(updated, s.finished)
		c.finished.Store(updated.UID, struct{}{})
	}
	return nil
}

// canRemoveFinalizer: a pod's finalizer goes once the Job is being deleted or is finishing,
// or the pod succeeded, or it failed — unless, with backoffLimitPerIndex, it is the failed pod
// its index's replacement takes its failure count from.
func (c *Controller) canRemoveFinalizer(logger klog.Logger, s *syncState, pod *corev1.Pod, failed bool) bool {
	if s.job.DeletionTimestamp != nil || s.finished != nil || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if hasBackoffLimitPerIndex(s.job) {
		if ix := completionIndex(pod); ix != unknownIndex {
			if p, ok := s.delayed[ix]; ok && p.UID == pod.UID {
				logger.V(3).Info("Delaying pod finalizer removal to await for pod recreation within the index", "pod", klog.KObj(pod))
				return false
			}
		}
	}
	return true
}

// flushAndRemoveFinalizers writes the status when needed (the uncounted UIDs and interim
// conditions must be stored before the finalizers go), removes the finalizers of pods, and
// counts those removed. It reports whether a status change is still unwritten.
func (c *Controller) flushAndRemoveFinalizers(ctx context.Context, s *syncState, pods []*corev1.Pod, withFinalizer sets.Set[types.UID], needsFlush bool) (bool, error) {
	if needsFlush {
		updated, err := c.updateStatus(ctx, s.job)
		if err != nil {
			return needsFlush, fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		s.job = updated
		c.backoff.set(s.key, s.backoff)
		needsFlush = false
	}
	var rmErr error
	if len(pods) > 0 {
		var removed []bool
		removed, rmErr = c.removeFinalizers(ctx, s.key, pods)
		for i, p := range pods {
			if removed[i] {
				withFinalizer.Delete(p.UID)
			}
		}
	}
	if countRemoved(&s.job.Status, withFinalizer) {
		needsFlush = true
	}
	if rmErr != nil && needsFlush {
		// Keep what was counted before failing the sync.
		updated, err := c.updateStatus(ctx, s.job)
		if err != nil {
			return needsFlush, fmt.Errorf("removing uncounted pods from status: %w", err)
		}
		s.job = updated
	}
	return needsFlush, rmErr
}

// removeFinalizers takes the tracking finalizer off the pods, concurrently; removed[i] is
// whether pods[i]'s is gone (a pod already gone counts).
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	removed := make([]bool, len(pods))
	c.finalizers.expect(key, uidsOf(pods))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i, pod := range pods {
		patch := removeFinalizerPatch(pod)
		if patch == nil {
			continue
		}
		wg.Go(func() {
			// Outside the worker's panic boundary: a panic is this patch's error.
			if err := recovery.Sync(ctx, controllerName, func() error { return c.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch) }); err != nil {
				// No update will show this removal.
				c.finalizers.observed(key, pod.UID)
				if !apierrors.IsNotFound(err) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("removing tracking finalizer of pod %s/%s: %w", pod.Namespace, pod.Name, err))
					mu.Unlock()
					return
				}
			}
			removed[i] = true
		})
	}
	wg.Wait()
	return removed, errors.Join(errs...)
}

// enactFinished sets the Complete or Failed condition once no pod is left uncounted or
// terminating, and reports whether it did.
func (c *Controller) enactFinished(logger klog.Logger, s *syncState) bool {
	if s.finished == nil {
		return false
	}
	job := s.job
	if u := job.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		logger.V(4).Info("Delaying marking the Job as finished, because there are still uncounted pod(s)", "job", klog.KObj(job),
			"condition", s.finished.Type, "count", len(u.Succeeded)+len(u.Failed))
		return false
	}
	if s.terminating > 0 {
		logger.V(4).Info("Delaying marking the Job as finished, because there are still terminating pod(s)", "job", klog.KObj(job),
			"condition", s.finished.Type, "count", s.terminating)
		return false
	}
	f := s.finished
	job.Status.Conditions, _ = ensureCondition(job.Status.Conditions, f.Type, f.Status, f.Reason, f.Message, c.clock.Now())
	if f.Type == batchv1.JobComplete {
		job.Status.CompletionTime = &f.LastTransitionTime
	}
	return true
}

// recordFinished events a finished Job as upstream: Normal Completed, or a Warning with the
// failure's reason and message.
func (c *Controller) recordFinished(job *batchv1.Job, f *batchv1.JobCondition) {
	if f.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			c.eventf(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		c.eventf(job, corev1.EventTypeNormal, "Completed", "Job completed")
		return
	}
	c.eventf(job, corev1.EventTypeWarning, f.Reason, "%s", f.Message)
}

// updateStatus writes the Job's status.
func (c *Controller) updateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}
