package job

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

// Upstream's condition messages.
const (
	msgBackoffLimitExceeded     = "Job has reached the specified backoff limit"
	msgDeadlineExceeded         = "Job was active longer than specified deadline"
	msgMaxFailedIndexesExceeded = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes            = "Job has failed indexes"
	msgCompletionsReached       = "Reached expected number of succeeded pods"
)

// syncState is one sync's view of a Job, built from the caches and carried through the steps.
type syncState struct {
	key  string
	job  *batchv1.Job // a copy: the sync writes its status
	pods []*corev1.Pod
	// active are the pods neither finished nor being deleted.
	active []*corev1.Pod
	// finished is the condition the Job is heading for (FailureTarget or
	// SuccessCriteriaMet, then Failed or Complete); nil while it runs.
	finished *batchv1.JobCondition
	// succeeded and failed count the pods counted, uncounted and newly finished.
	succeeded, failed int32
	// For an Indexed Job: the indexes status records, those with the newly succeeded, and
	// (with backoffLimitPerIndex) the failed ones.
	prevSucceededIndexes, succeededIndexes intervals
	failedIndexes                          *intervals
	backoff                                backoffRecord
	// expectedRemovals are pods whose finalizer removal is written but not yet seen.
	expectedRemovals sets.Set[types.UID]
	uncounted        *uncountedPods
	// delayed are, per index, failed pods kept until their replacement exists.
	delayed     map[int]*corev1.Pod
	terminating int32
	ready       int32
}

// syncJob brings the Job whose key is key one step closer to its spec: pods created or
// deleted, finished pods counted, conditions set. It is never run twice at once for one key.
func (c *Controller) syncJob(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() { logger.V(4).Info("Finished syncing job", "job", key, "elapsed", c.clock.Since(start)) }()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || ns == "" || name == "" {
		return nil // not a key this controller queued: nothing to retry
	}

	// 1. The Job, unless it is gone, someone else's, finished, or finished by this
	// controller and not yet seen so.
	shared, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		c.finalizers.forget(key)
		c.backoff.remove(key)
		return nil
	}
	if err != nil {
		return err
	}
	if managedByOther(shared) {
		logger.V(2).Info("Skip syncing the job as it is managed by an external controller", "job", key, "controllerName", *shared.Spec.ManagedBy)
		return nil
	}
	if IsFinished(shared) {
		c.backoff.remove(key)
		c.finished.Delete(shared.UID)
		return nil
	}
	if _, ok := c.finished.Load(shared.UID); ok {
		logger.V(2).Info("Skip syncing the job as it is marked finished but the update is not yet seen", "job", key)
		return nil
	}
	job := shared.DeepCopy()
	if m := job.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		c.eventf(job, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil
	}
	if !defaultSpec(job) {
		return nil // invalid beyond what defaulting mends; validation keeps these out
	}
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}

	// 2. Its pods. Expectations are read first: a pod created after the check is seen by the
	// next sync, never counted twice.
	satisfied := c.expectations.Satisfied(key)
	pods, err := c.podsForJob(ctx, job)
	if err != nil {
		return err
	}
	s := &syncState{
		key:              key,
		job:              job,
		pods:             pods,
		active:           podcontrol.FilterActivePods(pods),
		uncounted:        newUncountedPods(*job.Status.UncountedTerminatedPods),
		expectedRemovals: c.finalizers.expected(key),
		terminating:      int32(len(podcontrol.FilterTerminatingPods(pods))),
	}
	s.ready = countReady(s.active)
	active := int32(len(s.active))
	newSucceeded, newFailed := newFinishedPods(job, pods, s.uncounted, s.expectedRemovals)
	s.succeeded = job.Status.Succeeded + int32(len(newSucceeded)) + int32(s.uncounted.succeeded.Len())
	s.failed = job.Status.Failed + int32(countedFailures(job, newFailed)) + int32(s.uncounted.failed.Len())
	if job.Status.StartTime == nil && !isSuspended(job) {
		now := metav1.NewTime(c.clock.Now())
		job.Status.StartTime = &now
	}
	s.backoff = nextBackoffRecord(c.backoff.get(key), newSucceeded, newFailed)

	// 3. Has it failed or succeeded? In upstream's order: an earlier sync's verdict, then
	// failure (pod failure policy, backoff limit, deadline, failed indexes), then success.
	c.judge(logger, s)

	// 4. Act: a finished Job's pods are deleted; a running one gets the pods it needs.
	var manageErr error
	suspendChanged := false
	if s.finished != nil {
		deletedReady, deleted, err := c.deleteActivePods(ctx, job, s.active)
		if deleted != active || !satisfied {
			// Pods remain, or may not be in the cache yet: finish on a later sync.
			s.finished = nil
		}
		active -= deleted
		s.terminating += deleted
		s.ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			active, manageErr = c.manageJob(ctx, s)
			managed = true
		}
		var complete bool
		if job.Spec.Completions == nil {
			// Any success means done, once the other pods have finished.
			complete = s.succeeded > 0 && active == 0
		} else {
			complete = s.succeeded >= *job.Spec.Completions && active == 0
		}
		if complete {
			s.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, msgCompletionsReached, c.clock.Now())
		} else if managed {
			suspendChanged = c.updateSuspended(job)
		}
	}

	// 5. Count finished pods and write the status.
	needsUpdate := suspendChanged || active != job.Status.Active || !ptr.Equal(&s.ready, job.Status.Ready) ||
		!ptr.Equal(&s.terminating, job.Status.Terminating)
	job.Status.Active = active
	job.Status.Ready = ptr.To(s.ready)
	job.Status.Terminating = ptr.To(s.terminating)
	if err := c.trackStatus(ctx, s, needsUpdate); err != nil {
		return fmt.Errorf("tracking the status of job %s: %w", key, err)
	}
	return manageErr
}

// defaultSpec fills what the API server defaults, for Jobs stored without it (and tests that
// build Jobs by hand), and reports whether the Job can be synced at all.
func defaultSpec(job *batchv1.Job) bool {
	if job.Spec.Parallelism == nil {
		job.Spec.Parallelism = ptr.To[int32](1)
	}
	if job.Spec.BackoffLimit == nil {
		if hasBackoffLimitPerIndex(job) {
			job.Spec.BackoffLimit = ptr.To[int32](1<<31 - 1)
		} else {
			job.Spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	return !isIndexed(job) || job.Spec.Completions != nil
}

// judge sets s.finished when the Job has failed or succeeded.
func (c *Controller) judge(logger klog.Logger, s *syncState) {
	job, now := s.job, c.clock.Now()
	s.finished = hasTrueCondition(job, batchv1.JobSuccessCriteriaMet)
	if s.finished == nil {
		// A success already decided stands; otherwise a FailureTarget already decided, or a
		// FailJob rule.
		if ft := hasTrueCondition(job, batchv1.JobFailureTarget); ft != nil {
			s.finished = newCondition(batchv1.JobFailed, corev1.ConditionTrue, ft.Reason, ft.Message, now)
		} else if msg := failJobMessage(job, s.pods); msg != nil {
			s.finished = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonPodFailurePolicy, *msg, now)
		}
	}
	if s.finished == nil {
		switch {
		case s.failed > *job.Spec.BackoffLimit || pastBackoffLimitOnFailure(job, s.pods):
			s.finished = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, now)
		case c.pastActiveDeadline(job):
			s.finished = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonDeadlineExceeded, msgDeadlineExceeded, now)
		case job.Spec.ActiveDeadlineSeconds != nil && !isSuspended(job):
			left := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - c.clock.Since(job.Status.StartTime.Time)
			logger.V(2).Info("Job has activeDeadlineSeconds configuration. Will sync this job again", "job", s.key, "nextSyncIn", left)
			c.queue.AddAfter(s.key, left)
		}
	}
	if !isIndexed(job) {
		return
	}
	completions := *job.Spec.Completions
	s.prevSucceededIndexes, s.succeededIndexes = succeededIndexes(logger, job, s.pods)
	s.succeeded = int32(s.succeededIndexes.total())
	if hasBackoffLimitPerIndex(job) {
		failed := failedIndexes(logger, job, s.pods)
		s.failedIndexes = &failed
		if s.finished == nil {
			switch {
			case job.Spec.MaxFailedIndexes != nil && failed.total() > int(*job.Spec.MaxFailedIndexes):
				s.finished = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexesExceeded, now)
			case failed.total() > 0 && failed.total()+s.succeededIndexes.total() >= int(completions):
				s.finished = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonFailedIndexes, msgFailedIndexes, now)
			}
		}
		s.delayed = podsWithDelayedDeletion(logger, job, s.pods, s.active, s.succeededIndexes, s.failedIndexes, s.expectedRemovals)
	}
	if s.finished == nil {
		if msg, met := matchSuccessPolicy(logger, job.Spec.SuccessPolicy, completions, s.succeededIndexes); met {
			s.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonSuccessPolicy, msg, now)
		}
	}
}

// updateSuspended keeps the Suspended condition in line with spec.suspend, with upstream's
// events, and reports whether it changed. Resuming restarts status.startTime: the deadline
// counts time continuously active.
func (c *Controller) updateSuspended(job *batchv1.Job) bool {
	now := c.clock.Now()
	if isSuspended(job) {
		var changed bool
		job.Status.Conditions, changed = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now)
		if changed {
			c.eventf(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
			// MutableSchedulingDirectivesForSuspendedJobs (on by default): a suspended Job
			// has no start time.
			job.Status.StartTime = nil
		}
		return changed
	}
	var changed bool
	job.Status.Conditions, changed = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now)
	if changed {
		c.eventf(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
		t := metav1.NewTime(now)
		job.Status.StartTime = &t
	}
	return changed
}

// podsForJob are the pods the Job controls, after adopting matching orphans (adding the
// tracking finalizer) and releasing owned pods that no longer match. The pods are the
// cache's; adopted ones are copies with the finalizer added, as the patch did.
func (c *Controller) podsForJob(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("couldn't convert the selector of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	all, err := c.pods.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	owner := controllerref.Owner{
		Object:   job,
		Kind:     controllerKind,
		Selector: selector,
		// Adopting for a Job already being deleted would leave its pods to the garbage
		// collector; read it uncached once before the first adoption.
		CanAdopt: controllerref.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
			fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			if fresh.UID != job.UID {
				return nil, fmt.Errorf("original Job %v/%v is gone: got uid %v, wanted %v", job.Namespace, job.Name, fresh.UID, job.UID)
			}
			return fresh, nil
		}),
		Finalizers: []string{batchv1.JobTrackingFinalizer},
	}
	wasOwned := sets.New[types.UID]()
	for _, p := range all {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == job.UID {
			wasOwned.Insert(p.UID)
		}
	}
	pods, err := controllerref.ClaimPods(ctx, owner, all, c.podControl)
	for i, p := range pods {
		if !wasOwned.Has(p.UID) && !hasTrackingFinalizer(p) {
			pods[i] = p.DeepCopy()
			pods[i].Finalizers = append(pods[i].Finalizers, batchv1.JobTrackingFinalizer)
		}
	}
	return pods, err
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure failures are container restarts,
// and the Job fails when its running pods' restarts reach the backoff limit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending {
			for _, s := range p.Status.InitContainerStatuses {
				restarts += s.RestartCount
			}
			for _, s := range p.Status.ContainerStatuses {
				restarts += s.RestartCount
			}
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *job.Spec.BackoffLimit
}

// pastActiveDeadline reports whether a running Job has been active for
// activeDeadlineSeconds.
func (c *Controller) pastActiveDeadline(job *batchv1.Job) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return false
	}
	return c.clock.Since(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

func countReady(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if podcontrol.IsPodReady(p) {
			n++
		}
	}
	return n
}
