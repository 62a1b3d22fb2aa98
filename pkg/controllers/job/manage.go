package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// manageJob creates or deletes pods so that the running Job has the pods it wants, and
// returns the number active after it. Creation waits out the failure back-off; one sync
// either deletes or creates, deletion first.
func (c *Controller) manageJob(ctx context.Context, s *syncState) (int32, error) {
	logger := klog.FromContext(ctx)
	job := s.job
	active := int32(len(s.active))

	// 1. A suspended Job runs nothing.
	if isSuspended(job) {
		logger.V(4).Info("Deleting all active pods in suspended job", "job", klog.KObj(job), "active", active)
		rm := podsForRemoval(job, s.active, int(active))
		removedReady, removed, err := c.deleteJobPods(ctx, s.key, job, rm)
		s.terminating += removed
		s.ready -= removedReady
		return active - removed, err
	}

	// 2. How many should run: parallelism, but no more than the completions left; with no
	// completions, parallelism until one succeeded, then whatever still runs.
	parallelism := *job.Spec.Parallelism
	var want int32
	if job.Spec.Completions == nil {
		want = parallelism
		if s.succeeded > 0 {
			want = active
		}
	} else {
		want = max(0, min(*job.Spec.Completions-s.succeeded, parallelism))
	}

	// 3. Too many (or, Indexed, repeated or stray indexes): delete.
	rm := podsForRemoval(job, s.active, int(max(0, active-want)))
	if len(rm) > maxPodCreateDeletePerSync {
		rm = rm[:maxPodCreateDeletePerSync]
	}
	if len(rm) > 0 {
		logger.V(4).Info("Too many pods running for job", "job", klog.KObj(job), "deleted", len(rm), "target", want)
		removedReady, removed, err := c.deleteJobPods(ctx, s.key, job, rm)
		s.terminating += removed
		s.ready -= removedReady
		return active - removed, err
	}

	// 4. Too few: create, after the back-off, in slow-start batches.
	var terminating int32
	if onlyReplaceFailedPods(job) {
		terminating = s.terminating
	}
	diff := want - terminating - active
	if diff <= 0 {
		return active, nil
	}
	if !hasBackoffLimitPerIndex(job) {
		if left := s.backoff.remaining(c.clock.Now()); left > 0 {
			c.enqueue(job, max(left, syncBatchPeriod))
			return active, nil
		}
	}
	diff = min(diff, int32(maxPodCreateDeletePerSync))
	var indexes []int
	if isIndexed(job) {
		indexes = pendingIndexes(job, s.pods, s.active, s.succeededIndexes, s.failedIndexes, int(diff), int(*job.Spec.Completions))
		if hasBackoffLimitPerIndex(job) {
			var left time.Duration
			if indexes, left = c.indexesReady(logger, indexes, s.delayed); left > 0 {
				c.enqueue(job, max(left, syncBatchPeriod))
				return active, nil
			}
		}
		diff = int32(len(indexes))
	}
	if diff == 0 {
		return active, nil
	}
	logger.V(4).Info("Too few pods running", "job", s.key, "need", want, "creating", diff)
	created, err := c.createPods(ctx, s, int(diff), indexes)
	return active + int32(created), err
}

// indexesReady are those of indexes whose back-off is over; when none is, the shortest wait.
func (c *Controller) indexesReady(logger klog.Logger, indexes []int, delayed map[int]*corev1.Pod) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	now := c.clock.Now()
	for _, ix := range indexes {
		if left := remainingIndexBackoff(logger, now, delayed[ix]); left == 0 {
			ready = append(ready, ix)
		} else if wait == 0 || left < wait {
			wait = left
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}

// createPods creates n pods (those of indexes, for an Indexed Job) in slow-start batches and
// returns how many were created. Every creation not seen by the informer (failed, or skipped
// after a failed batch) is taken off the expectations.
func (c *Controller) createPods(ctx context.Context, s *syncState, n int, indexes []int) (int, error) {
	logger := klog.FromContext(ctx)
	job := s.job
	template := job.Spec.Template.DeepCopy()
	if isIndexed(job) {
		addCompletionIndexEnv(&template.Spec)
	}
	if !slices.Contains(template.Finalizers, batchv1.JobTrackingFinalizer) {
		template.Finalizers = append(template.Finalizers, batchv1.JobTrackingFinalizer)
	}
	ref := controllerref.NewRef(job, controllerKind)

	c.expectations.ExpectCreations(s.key, n)
	var (
		next    atomic.Int32 // the next of indexes to hand out
		created atomic.Int32
	)
	_, err := podcontrol.SlowStartBatch(ctx, n, podcontrol.SlowStartInitialBatchSize, func() error {
		pod := podcontrol.PodFromTemplate(template, job, ref)
		if len(indexes) > 0 {
			ix := indexes[next.Add(1)-1]
			setIndex(logger, pod, job, ix, s.delayed[ix])
		}
		err := c.podControl.CreatePod(ctx, pod, job)
		if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// Every create will fail the same way while the namespace goes; nothing to retry.
			// The expectation expires, as upstream's.
			created.Add(1)
			return nil
		}
		if err != nil {
			return err
		}
		created.Add(1)
		return nil
	})
	if missed := n - int(created.Load()); missed > 0 {
		logger.V(2).Info("Failed or skipped creations, lowering expectations", "job", klog.KObj(job), "count", missed)
		c.expectations.LowerCreations(s.key, missed)
	}
	if err != nil {
		err = fmt.Errorf("creating pods for job %s: %w", s.key, err)
	}
	return int(created.Load()), err
}

// setIndex makes pod the pod of completion index ix: its annotation and label, its name
// "<job>-<ix>-<random>" and hostname "<job>-<ix>", and with backoffLimitPerIndex the failure
// counts carried on from replaced.
func setIndex(logger klog.Logger, pod *corev1.Pod, job *batchv1.Job, ix int, replaced *corev1.Pod) {
	v := strconv.Itoa(ix)
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = v
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = v
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
	pod.GenerateName = indexedGenerateName(job.Name, ix)
	if hasBackoffLimitPerIndex(job) {
		failures, ignored := indexFailureCounts(logger, job, replaced)
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
		if ignored > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
		}
	}
}

// podsForRemoval are at least n of the active pods to delete (for an Indexed Job also every
// repeated or stray index), in upstream's order: not ready before ready, unscheduled before
// scheduled, pending before running.
func podsForRemoval(job *batchv1.Job, active []*corev1.Pod, n int) []*corev1.Pod {
	var rm, left []*corev1.Pod
	if isIndexed(job) {
		rm, left = duplicateIndexPods(active, int(*job.Spec.Completions))
	} else {
		left = slices.Clone(active)
	}
	if len(rm) < n {
		sort.Sort(podcontrol.ActivePods(left))
		rm = append(rm, left[:n-len(rm)]...)
	}
	return rm
}

// deleteJobPods deletes the pods of a running Job, taking their tracking finalizer off first
// (a pod deleted on purpose is not a failure to count), and returns how many of them were
// ready and how many were deleted.
func (c *Controller) deleteJobPods(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod) (int32, int32, error) {
	logger := klog.FromContext(ctx)
	c.expectations.ExpectDeletions(key, uidsOf(pods))
	return parallelDelete(ctx, pods, func(pod *corev1.Pod) error {
		err := func() error {
			if patch := removeFinalizerPatch(pod); patch != nil {
				if err := c.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch); err != nil {
					return fmt.Errorf("removing completion finalizer: %w", err)
				}
			}
			return c.podControl.DeletePod(ctx, job.Namespace, pod.Name, pod.UID, job)
		}()
		if err != nil {
			// The informer will not show this deletion.
			c.expectations.DeletionObserved(key, pod.UID)
			if !apierrors.IsNotFound(err) {
				logger.V(2).Info("Failed to delete Pod", "job", klog.KObj(job), "pod", klog.KObj(pod), "err", err)
				return err
			}
		}
		return nil
	})
}

// deleteActivePods deletes the active pods of a finished Job, keeping their finalizers: the
// status tracking counts them as failed and then removes the finalizers.
func (c *Controller) deleteActivePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (int32, int32, error) {
	return parallelDelete(ctx, pods, func(pod *corev1.Pod) error {
		if err := c.podControl.DeletePod(ctx, job.Namespace, pod.Name, pod.UID, job); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
}

// parallelDelete runs del on every pod at once and returns how many of the pods were ready,
// how many del succeeded on, and the errors.
func parallelDelete(ctx context.Context, pods []*corev1.Pod, del func(*corev1.Pod) error) (ready, deleted int32, err error) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		nReady atomic.Int32
		nDone  atomic.Int32
	)
	for _, pod := range pods {
		wg.Go(func() {
			// Outside the worker's panic boundary: a panic is this deletion's error.
			if err := recovery.Sync(ctx, controllerName, func() error { return del(pod) }); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			nDone.Add(1)
			if podcontrol.IsPodReady(pod) {
				nReady.Add(1)
			}
		})
	}
	wg.Wait()
	return nReady.Load(), nDone.Load(), errors.Join(errs...)
}
