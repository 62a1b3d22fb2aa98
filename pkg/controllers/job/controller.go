// Package job is berth's Job controller (kube-controller-manager's job-controller). It stands
// at the head of the pod's flow for batch work: for each batch/v1 Job it creates pods from the
// Job's template through the API server (which the scheduler then places and a node agent
// runs), counts the pods that finish, and ends the Job with a Complete or Failed condition.
//
// A Job runs up to parallelism pods at a time until completions of them succeeded (or, with
// no completions, until one did and the rest finished). In Indexed mode each pod gets a
// completion index 0..completions-1 (pod name "<job>-<index>-<random>", the
// batch.kubernetes.io/job-completion-index annotation and label, JOB_COMPLETION_INDEX from
// that label, hostname "<job>-<index>") and the Job records status.completedIndexes and, with
// backoffLimitPerIndex, status.failedIndexes. Failed pods are re-created after an exponential
// back-off (10s doubling, at most 10 minutes, as upstream's code), until backoffLimit (or the
// per-index limit) is exceeded; podFailurePolicy can fail the Job or an index at once, or not
// count a failure; successPolicy can end an Indexed Job early; activeDeadlineSeconds bounds
// its running time; suspend deletes its pods until it is resumed.
//
// The lifecycle of a Job's status, as upstream's:
//
//	running ─failure criteria─► FailureTarget ─pods gone, all counted─► Failed
//	        └success criteria─► SuccessCriteriaMet ─pods gone, all counted─► Complete
//
// with Suspended True/False beside it. Every pod carries the batch.kubernetes.io/job-tracking
// finalizer until it has been counted (tracking.go), so that no finished pod is lost to the
// pod garbage collector or a crash between the status writes; a second queue takes that
// finalizer off orphaned pods and those of finished or deleted Jobs.
//
// Its main queue holds Job keys; a Job is synced when it is added or its spec changes, at
// most once a second for pod events and status writes, at its deadline, and when its back-off
// ends.
package job

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/expectations"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "job"

// controllerKind is the kind of the pods' controller references.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// eventAction is the action of this controller's events (events.k8s.io requires one).
const eventAction = "Sync"

var (
	// syncBatchPeriod gathers the syncs that pod events and status writes ask for.
	syncBatchPeriod = time.Second
	// maxUncountedPods bounds status.uncountedTerminatedPods (about 20 KB of UIDs) and the
	// finalizer removals of one sync, so that a big Job does not starve the others.
	maxUncountedPods = 500
	// maxPodCreateDeletePerSync bounds the pod writes of one sync.
	maxPodCreateDeletePerSync = 500
)

// Controller runs Jobs' pods and keeps their status.
type Controller struct {
	client     kubernetes.Interface
	podControl podcontrol.Interface
	jobs       batchlisters.JobLister
	pods       corelisters.PodLister
	synced     []cache.InformerSynced

	// expectations are the pod creations and deletions written and not yet seen.
	expectations *expectations.Expectations
	// finalizers are the finalizer removals written and not yet seen.
	finalizers *finalizerExpectations
	// backoff remembers each Job's failures since its last success.
	backoff *backoffStore
	// finished holds the UIDs of Jobs this controller marked finished whose update the
	// informer has not shown yet: a sync in between would count them again.
	finished sync.Map

	queue       workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[orphanKey]
	clock       clock.WithTicker

	// Recorder, when set, gets the Jobs' events (and podcontrol's pod events on them).
	Recorder events.EventRecorder
}

// orphanKey names pods whose tracking finalizer may have to go: one pod by name, or the pods
// a finished or deleted Job selected (selector in its String form).
type orphanKey struct {
	namespace, name, selector string
}

// NewController returns a Job controller fed by the given informers. Start the informers and
// call Run.
func NewController(client kubernetes.Interface, podInformer coreinformers.PodInformer, jobInformer batchinformers.JobInformer) *Controller {
	return newController(client, podInformer, jobInformer, clock.RealClock{})
}

func newController(client kubernetes.Interface, podInformer coreinformers.PodInformer, jobInformer batchinformers.JobInformer, clk clock.WithTicker) *Controller {
	c := &Controller{
		client:       client,
		jobs:         jobInformer.Lister(),
		pods:         podInformer.Lister(),
		expectations: expectations.NewWithClock(clk),
		finalizers:   newFinalizerExpectations(),
		backoff:      newBackoffStore(),
		clock:        clk,
		// Upstream's API back-off for failed syncs: 1s doubling to a minute.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job", Clock: clk}),
		orphanQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[orphanKey](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[orphanKey]{Name: "job_orphan_pod", Clock: clk}),
	}
	c.podControl = podcontrol.NewDeferred(client, &c.Recorder)
	jobRegistration, _ := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj, 0) },
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteJob,
	})
	podRegistration, _ := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: func(obj any) { c.deletePod(obj, true) },
	})
	c.synced = []cache.InformerSynced{jobRegistration.HasSynced, podRegistration.HasSynced}
	return c
}

// Run starts workers for each queue and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	jobs := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "job controller",
		Queue:          c.queue,
		Sync:           c.syncJob,
		Reference:      recovery.ReferenceByKey("batch/v1", "Job"),
		Recorder:       c.Recorder,
		KeyName:        "job",
		FailureMessage: "Syncing a job failed",
		Expected: func(err error) (string, bool) {
			return "Job changed since it was read; retrying", apierrors.IsConflict(err)
		},
	}
	orphans := &recovery.Worker[orphanKey]{
		Name:           controllerName,
		Title:          "job controller's orphan pod worker",
		Queue:          c.orphanQueue,
		Sync:           c.syncOrphanPods,
		KeyName:        "pods",
		FailureMessage: "Removing the tracking finalizer of orphan pods failed",
	}
	var wg sync.WaitGroup
	var orphanErr error
	wg.Go(func() { orphanErr = orphans.Run(ctx, workers, c.synced...) })
	err := jobs.Run(ctx, workers, c.synced...)
	wg.Wait()
	return errors.Join(err, orphanErr)
}

// enqueue queues a Job (or a tombstone's) after delay.
func (c *Controller) enqueue(obj any, delay time.Duration) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of %T: %w", obj, err))
		return
	}
	c.queue.AddAfter(key, delay)
}

// enqueueBatched queues a Job for a sync that pod events or status writes asked for.
func (c *Controller) enqueueBatched(job *batchv1.Job) { c.enqueue(job, syncBatchPeriod) }

func (c *Controller) updateJob(old, cur any) {
	oldJob, ok1 := old.(*batchv1.Job)
	curJob, ok2 := cur.(*batchv1.Job)
	if !ok1 || !ok2 {
		return
	}
	// A finished Job's pods may still hold finalizers (they should not; this is a backstop).
	if IsFinished(curJob) {
		c.enqueueSelector(curJob)
		return
	}
	if curJob.Generation == oldJob.Generation {
		c.enqueueBatched(curJob)
	} else {
		c.enqueue(curJob, 0) // a spec change is acted on at once
	}
	// A new activeDeadlineSeconds needs a sync when it passes.
	if curJob.Status.StartTime != nil && curJob.Spec.ActiveDeadlineSeconds != nil {
		if o := oldJob.Spec.ActiveDeadlineSeconds; o == nil || *o != *curJob.Spec.ActiveDeadlineSeconds {
			total := time.Duration(*curJob.Spec.ActiveDeadlineSeconds) * time.Second
			c.enqueue(curJob, total-c.clock.Since(curJob.Status.StartTime.Time))
		}
	}
}

func (c *Controller) deleteJob(obj any) {
	c.enqueue(obj, 0)
	job, ok := obj.(*batchv1.Job)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if job, ok = tombstone.Obj.(*batchv1.Job); !ok {
			return
		}
	}
	c.finished.Delete(job.UID)
	c.enqueueSelector(job)
	key := cache.MetaObjectToName(job).String()
	// A new Job of the same name starts clean.
	c.expectations.Delete(key)
	c.backoff.remove(key)
}

// enqueueSelector queues the pods of a finished or deleted Job for finalizer removal.
func (c *Controller) enqueueSelector(job *batchv1.Job) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("job %s/%s has an invalid label selector: %w", job.Namespace, job.Name, err))
		return
	}
	c.orphanQueue.Add(orphanKey{namespace: job.Namespace, selector: selector.String()})
}

func (c *Controller) enqueueOrphanPod(pod *corev1.Pod) {
	c.orphanQueue.Add(orphanKey{namespace: pod.Namespace, name: pod.Name})
}

// resolveControllerRef is the Job a controller reference names, if it is in the cache with
// that UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	job, err := c.jobs.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// podJobs are the Jobs whose selector matches an orphan pod: those that may adopt it.
func (c *Controller) podJobs(pod *corev1.Pod) []*batchv1.Job {
	jobs, err := c.jobs.GetPodJobs(pod)
	if err != nil {
		return nil
	}
	result := make([]*batchv1.Job, len(jobs))
	for i := range jobs {
		result[i] = &jobs[i]
	}
	return result
}

func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen first already being deleted (after a restart): not a creation to observe.
		c.deletePod(pod, false)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil {
			c.expectations.CreationObserved(cache.MetaObjectToName(job).String())
			c.enqueueBatched(job)
		}
		return
	}
	if hasTrackingFinalizer(pod) {
		c.enqueueOrphanPod(pod)
	}
	for _, job := range c.podJobs(pod) {
		c.enqueueBatched(job)
	}
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || curPod.ResourceVersion == oldPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		// Being deleted gracefully: the Job may replace it now rather than once it is gone.
		c.deletePod(curPod, false)
		return
	}
	// Whether the finalizer went is read from curPod only: adding and removing it again
	// (an ownership change) may arrive as one update.
	finalizerRemoved := !hasTrackingFinalizer(curPod)
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := c.resolveControllerRef(oldPod.Namespace, oldRef); job != nil {
			if finalizerRemoved {
				c.finalizers.observed(cache.MetaObjectToName(job).String(), curPod.UID)
			}
			c.enqueueBatched(job)
		}
	}
	if curRef != nil {
		if job := c.resolveControllerRef(curPod.Namespace, curRef); job != nil {
			if finalizerRemoved {
				c.finalizers.observed(cache.MetaObjectToName(job).String(), curPod.UID)
			}
			c.enqueueBatched(job)
		}
		return
	}
	if hasTrackingFinalizer(curPod) {
		c.enqueueOrphanPod(curPod)
	}
	if refChanged || !reflect.DeepEqual(curPod.Labels, oldPod.Labels) {
		for _, job := range c.podJobs(curPod) {
			c.enqueueBatched(job)
		}
	}
}

// deletePod handles a pod deleted (final) or given a deletion timestamp.
func (c *Controller) deletePod(obj any, final bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tombstone.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	ref := metav1.GetControllerOf(pod)
	hasFinalizer := hasTrackingFinalizer(pod)
	var job *batchv1.Job
	if ref != nil {
		job = c.resolveControllerRef(pod.Namespace, ref)
	}
	if job == nil || IsFinished(job) {
		// No sync of a Job will take this pod's finalizer off.
		if hasFinalizer {
			c.enqueueOrphanPod(pod)
		}
		return
	}
	key := cache.MetaObjectToName(job).String()
	c.expectations.DeletionObserved(key, pod.UID)
	if final || !hasFinalizer {
		c.finalizers.observed(key, pod.UID)
	}
	c.enqueueBatched(job)
}

// syncOrphanPods takes the tracking finalizer off the pods key names that no unfinished Job
// controls.
func (c *Controller) syncOrphanPods(ctx context.Context, key orphanKey) error {
	if key.selector == "" {
		pod, err := c.pods.Pods(key.namespace).Get(key.name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return c.releaseOrphanPod(ctx, pod)
	}
	selector, err := labels.Parse(key.selector)
	if err != nil {
		return nil // not a selector this controller queued: nothing to retry
	}
	pods, err := c.pods.Pods(key.namespace).List(selector)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if err := c.releaseOrphanPod(ctx, pod); err != nil {
			klog.FromContext(ctx).Error(err, "Removing the tracking finalizer of a pod failed", "pod", klog.KObj(pod))
			c.orphanQueue.AddRateLimited(orphanKey{namespace: pod.Namespace, name: pod.Name})
		}
	}
	return nil
}

// releaseOrphanPod removes the pod's tracking finalizer unless an unfinished Job of this
// controller controls it.
func (c *Controller) releaseOrphanPod(ctx context.Context, pod *corev1.Pod) error {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ref.Kind != controllerKind.Kind || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return nil // not a Job's: its finalizer is none of ours to take
		}
		job := c.resolveControllerRef(pod.Namespace, ref)
		if job != nil && managedByOther(job) {
			return nil
		}
		if job != nil && !IsFinished(job) {
			return nil // adopted since
		}
	}
	patch := removeFinalizerPatch(pod)
	if patch == nil {
		return nil
	}
	if err := c.podControl.PatchPod(ctx, pod.Namespace, pod.Name, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the tracking finalizer of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// managedByOther reports whether spec.managedBy hands the Job to another controller.
func managedByOther(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName
}

// eventf records an event on job when a recorder is set.
func (c *Controller) eventf(job *batchv1.Job, eventType, reason, note string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(job, nil, eventType, reason, eventAction, note, args...)
	}
}

// uidsOf are the pods' UIDs.
func uidsOf(pods []*corev1.Pod) []types.UID {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	return uids
}
