// Package cronjob is berth's CronJob controller (kube-controller-manager's cronjob-controller,
// upstream's controller v2). It stands one step before the Job controller in the pod's flow:
// at each start time of a CronJob's schedule (a standard cron line, in spec.timeZone or the
// controller's local zone) it creates a Job from the CronJob's jobTemplate, named
// "<cronjob>-<start time in minutes since the epoch>" and annotated with
// batch.kubernetes.io/cronjob-scheduled-timestamp, which the Job controller then runs.
//
// concurrencyPolicy decides what a start does while an earlier Job still runs: Allow starts
// another, Forbid skips the start, Replace deletes the running Jobs first. A start more than
// startingDeadlineSeconds late is skipped (MissSchedule); more than 100 missed starts draw a
// warning. The CronJob records its running Jobs in status.active and the times of its last
// start and last success, and keeps at most successfulJobsHistoryLimit and
// failedJobsHistoryLimit finished Jobs, deleting the oldest.
//
// Its queue holds CronJob keys. A CronJob is synced when it or one of its Jobs changes, and
// again just after its next start time, which each sync computes.
package cronjob

import (
	"context"
	"fmt"
	"reflect"
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

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "cronjob"

// controllerKind is the kind of the Jobs' controller references.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// eventAction is the action of this controller's events (events.k8s.io requires one).
const eventAction = "Sync"

// Controller creates the Jobs of CronJobs on schedule.
type Controller struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	clock    clock.WithTicker

	// Recorder, when set, gets the CronJobs' events.
	Recorder events.EventRecorder
}

// NewController returns a CronJob controller fed by the given informers. Start the
// informers and call Run.
func NewController(client kubernetes.Interface, jobInformer batchinformers.JobInformer, cronJobInformer batchinformers.CronJobInformer) *Controller {
	return newController(client, jobInformer, cronJobInformer, clock.RealClock{})
}

func newController(client kubernetes.Interface, jobInformer batchinformers.JobInformer, cronJobInformer batchinformers.CronJobInformer, clk clock.WithTicker) *Controller {
	c := &Controller{
		client:   client,
		cronJobs: cronJobInformer.Lister(),
		jobs:     jobInformer.Lister(),
		clock:    clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cronjob", Clock: clk}),
	}
	jobRegistration, _ := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addJob,
		UpdateFunc: c.updateJob,
		DeleteFunc: c.jobDeleted,
	})
	cronJobRegistration, _ := cronJobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.updateCronJob,
		DeleteFunc: c.enqueue,
	})
	c.synced = []cache.InformerSynced{jobRegistration.HasSynced, cronJobRegistration.HasSynced}
	return c
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "cronjob controller v2",
		Queue:          c.queue,
		Sync:           c.sync,
		Reference:      recovery.ReferenceByKey("batch/v1", "CronJob"),
		Recorder:       c.Recorder,
		KeyName:        "cronjob",
		FailureMessage: "Syncing a CronJob failed; requeuing",
		Expected: func(err error) (string, bool) {
			return "CronJob changed since it was read; retrying", apierrors.IsConflict(err)
		},
	}
	return w.Run(ctx, workers, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of %T: %w", obj, err))
		return
	}
	c.queue.Add(key)
}

// updateCronJob syncs a CronJob whose schedule changed at its next start time, and one
// otherwise changed at once.
func (c *Controller) updateCronJob(old, cur any) {
	oldCJ, ok1 := old.(*batchv1.CronJob)
	cj, ok2 := cur.(*batchv1.CronJob)
	if !ok1 || !ok2 {
		return
	}
	if oldCJ.Spec.Schedule == cj.Spec.Schedule && ptr.Equal(oldCJ.Spec.TimeZone, cj.Spec.TimeZone) {
		c.enqueue(cj)
		return
	}
	schedule, _ := formatSchedule(cj)
	sched, err := parseSchedule(schedule)
	if err != nil {
		c.eventf(cj, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", cj.Spec.Schedule)
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(cj)
	if err != nil {
		return
	}
	c.queue.AddAfter(key, nextScheduleTimeDuration(cj, c.clock.Now(), sched))
}

// resolveControllerRef is the CronJob a controller reference names, if it is in the cache
// with that UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.CronJob {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	cj, err := c.cronJobs.CronJobs(namespace).Get(ref.Name)
	if err != nil || cj.UID != ref.UID {
		return nil
	}
	return cj
}

// enqueueOwner queues the CronJob controlling job, if any.
func (c *Controller) enqueueOwner(job *batchv1.Job, ref *metav1.OwnerReference) {
	if ref == nil {
		return
	}
	if cj := c.resolveControllerRef(job.Namespace, ref); cj != nil {
		c.enqueue(cj)
	}
}

func (c *Controller) addJob(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	c.enqueueOwner(job, metav1.GetControllerOf(job))
}

func (c *Controller) updateJob(old, cur any) {
	oldJob, ok1 := old.(*batchv1.Job)
	job, ok2 := cur.(*batchv1.Job)
	if !ok1 || !ok2 || job.ResourceVersion == oldJob.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOf(job), metav1.GetControllerOf(oldJob)
	if oldRef != nil && !reflect.DeepEqual(curRef, oldRef) {
		c.enqueueOwner(oldJob, oldRef)
	}
	c.enqueueOwner(job, curRef)
}

func (c *Controller) jobDeleted(obj any) {
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
	c.enqueueOwner(job, metav1.GetControllerOf(job))
}

// sync is one CronJob's reconcile: it tidies the finished Jobs, starts the Job due, writes
// the status, and requeues the CronJob for its next start time.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}
	cj, err := c.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("CronJob not found, may be it is deleted", "cronjob", klog.KRef(ns, name))
		return nil
	}
	if err != nil {
		return err
	}
	jobs, err := c.jobsOf(cj)
	if err != nil {
		return err
	}
	cj = cj.DeepCopy()
	cleaned := c.cleanupFinishedJobs(ctx, cj, jobs)
	requeueAfter, changed, syncErr := c.syncCronJob(ctx, cj, jobs)
	if syncErr != nil {
		logger.V(2).Info("Error reconciling cronjob", "cronjob", klog.KObj(cj), "err", syncErr)
	}
	if cleaned || changed {
		if _, err := c.client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the status of cronjob %s (resource version %s): %w", key, cj.ResourceVersion, err)
		}
	}
	if requeueAfter != nil {
		logger.V(4).Info("Re-queuing cronjob", "cronjob", klog.KObj(cj), "requeueAfter", *requeueAfter)
		c.queue.AddAfter(key, *requeueAfter)
		return nil
	}
	return syncErr
}

// jobsOf are the Jobs cj controls, from the cache.
func (c *Controller) jobsOf(cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	all, err := c.jobs.Jobs(cj.Namespace).List(labelsEverything)
	if err != nil {
		return nil, err
	}
	var jobs []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.UID == cj.UID {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

func (c *Controller) eventf(cj *batchv1.CronJob, eventType, reason, note string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(cj, nil, eventType, reason, eventAction, note, args...)
	}
}

// requeue is the wait until the next start time, as sync's result.
func requeue(d time.Duration) *time.Duration { return &d }
