// Package ttlafterfinished is berth's TTL-after-finished controller (kube-controller-manager's
// ttl-after-finished-controller). It stands at the end of a batch Job's flow: once the Job
// controller has given a Job its Complete or Failed condition, and the Job sets
// spec.ttlSecondsAfterFinished, this controller deletes the Job that many seconds after the
// condition's lastTransitionTime, with foreground propagation so that its pods go first.
//
// Its queue holds Job keys. A finished Job with a TTL is queued when it is added or updated,
// and again at its expiry. Before deleting, the controller reads the Job from the API server
// (the cached one may be stale: its TTL changed, or it was re-created) and deletes only if the
// fresh Job has expired too, with its UID as a precondition.
package ttlafterfinished

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/job"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "ttlafterfinished"

// Controller deletes finished Jobs whose TTL has passed.
type Controller struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	clock  clock.WithTicker

	// Recorder, when set, gets a FailedSync event on a Job whose sync panicked (upstream's
	// controller records no events of its own).
	Recorder events.EventRecorder
}

// NewController returns a TTL-after-finished controller fed by the Job informer. Start the
// informer and call Run.
func NewController(client kubernetes.Interface, jobInformer batchinformers.JobInformer) *Controller {
	return newController(client, jobInformer, clock.RealClock{})
}

func newController(client kubernetes.Interface, jobInformer batchinformers.JobInformer, clk clock.WithTicker) *Controller {
	c := &Controller{
		client: client,
		jobs:   jobInformer.Lister(),
		clock:  clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ttl_jobs_to_delete", Clock: clk}),
	}
	registration, _ := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.jobChanged,
		UpdateFunc: func(_, cur any) { c.jobChanged(cur) },
	})
	c.synced = []cache.InformerSynced{registration.HasSynced}
	return c
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "TTL after finished controller",
		Queue:          c.queue,
		Sync:           c.processJob,
		Reference:      recovery.ReferenceByKey("batch/v1", "Job"),
		Recorder:       c.Recorder,
		KeyName:        "job",
		FailureMessage: "Failed to clean up job, will retry",
	}
	return w.Run(ctx, workers, c.synced...)
}

// jobChanged queues a Job that is finished, has a TTL, and is not being deleted.
func (c *Controller) jobChanged(obj any) {
	j, ok := obj.(*batchv1.Job)
	if !ok || j.DeletionTimestamp != nil || !needsCleanup(j) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(j)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of job %s/%s: %w", j.Namespace, j.Name, err))
		return
	}
	c.queue.Add(key)
}

// processJob deletes the Job whose key is key if its TTL has passed, in the cache and then in
// a fresh read; otherwise it requeues the Job for when the TTL will have passed.
func (c *Controller) processJob(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}
	logger.V(4).Info("Checking if Job is ready for cleanup", "job", klog.KRef(ns, name))
	cached, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if expired, err := c.processTTL(logger, key, cached); err != nil || !expired {
		return err
	}

	// The cached TTL may be stale: decide again on the Job as stored.
	fresh, err := c.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting job %s: %w", key, err)
	}
	if expired, err := c.processTTL(logger, key, fresh); err != nil || !expired {
		return err
	}
	logger.V(4).Info("Cleaning up Job", "job", klog.KObj(fresh))
	err = c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting job %s: %w", key, err)
	}
	return nil
}

// processTTL reports whether j's TTL has passed; if it has yet to pass, it requeues the key
// for then.
func (c *Controller) processTTL(logger klog.Logger, key string, j *batchv1.Job) (bool, error) {
	if j.DeletionTimestamp != nil || !needsCleanup(j) {
		return false, nil
	}
	now := c.clock.Now()
	left, err := timeLeft(logger, j, now)
	if err != nil {
		return false, err
	}
	if left <= 0 {
		return true, nil
	}
	c.queue.AddAfter(key, left)
	return false, nil
}

// needsCleanup reports whether j is finished and has a TTL.
func needsCleanup(j *batchv1.Job) bool {
	return j.Spec.TTLSecondsAfterFinished != nil && job.IsFinished(j)
}

// timeLeft is how long until j's TTL passes (negative once it has), counted from the
// lastTransitionTime of its Complete or Failed condition.
func timeLeft(logger klog.Logger, j *batchv1.Job, now time.Time) (time.Duration, error) {
	finishAt, err := finishTime(j)
	if err != nil {
		return 0, err
	}
	if finishAt.After(now) {
		logger.Info("Warning: Found Job finished in the future. This is likely due to time skew in the cluster. Job cleanup will be deferred.", "job", klog.KObj(j))
	}
	expireAt := finishAt.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second)
	left := expireAt.Sub(now)
	logger.V(4).Info("Found Job finished", "job", klog.KObj(j), "finishTime", finishAt.UTC(), "remainingTTL", left,
		"startTime", now.UTC(), "deadlineTTL", expireAt.UTC())
	return left, nil
}

// finishTime is when the finished Job finished.
func finishTime(j *batchv1.Job) (time.Time, error) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			if c.LastTransitionTime.IsZero() {
				return time.Time{}, fmt.Errorf("unable to find the time when the Job %s/%s finished", j.Namespace, j.Name)
			}
			return c.LastTransitionTime.Time, nil
		}
	}
	return time.Time{}, errors.New("unable to find the status of the finished Job " + j.Namespace + "/" + j.Name)
}
