package cronjob

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/job"
)

var labelsEverything = labels.Everything()

// syncCronJob reconciles cj (a copy, whose status it changes) with its Jobs and starts the
// Job due, if any. It returns when to look again (nil: only on the next change), whether the
// status changed, and an error to retry on.
func (c *Controller) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (*time.Duration, bool, error) {
	logger := klog.FromContext(ctx)
	now := c.clock.Now()
	changed := false

	// 1. status.active against the Jobs: a running Job not listed is unexpected (unless a
	// fresh read lists it: the cache may be behind this controller's own write), a finished
	// one leaves the list, and the latest success is recorded.
	children := make(map[types.UID]bool)
	for _, j := range jobs {
		children[j.UID] = true
		found := inActiveList(cj, j.UID)
		finished := job.IsFinished(j)
		switch {
		case !found && !finished:
			fresh, err := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
			if err != nil {
				return nil, changed, err
			}
			if inActiveList(fresh, j.UID) {
				// Go on from the fresh copy, whose status is the one to write to.
				fresh.DeepCopyInto(cj)
				continue
			}
			c.eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
			// Not added to status.active: upstream leaves that to a user who wants it.
		case finished:
			if found {
				deleteFromActiveList(cj, j.UID)
				c.eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, job.FinishedCondition(j))
				changed = true
			}
			if job.FinishedCondition(j) == batchv1.JobComplete && j.Status.CompletionTime != nil {
				if last := cj.Status.LastSuccessfulTime; last == nil || j.Status.CompletionTime.After(last.Time) {
					cj.Status.LastSuccessfulTime = j.Status.CompletionTime
					changed = true
				}
			}
		}
	}
	// Listed Jobs that are gone.
	for _, ref := range slices.Clone(cj.Status.Active) {
		if children[ref.UID] {
			continue
		}
		_, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			c.eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
			deleteFromActiveList(cj, ref.UID)
			changed = true
		case err != nil:
			return nil, changed, err
		}
	}
	if cj.DeletionTimestamp != nil {
		return nil, changed, nil // the garbage collector deletes its Jobs
	}

	// 2. Can it start anything? Not with an unknown zone, suspended, or an unusable schedule.
	if tz := cj.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil {
			logger.V(4).Info("Not starting job because timeZone is invalid", "cronjob", klog.KObj(cj), "timeZone", *tz, "err", err)
			c.eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return nil, changed, nil
		}
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		logger.V(4).Info("Not starting job because the cron is suspended", "cronjob", klog.KObj(cj))
		return nil, changed, nil
	}
	schedule, usesTZ := formatSchedule(cj)
	if usesTZ {
		c.eventf(cj, corev1.EventTypeWarning, "UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := parseSchedule(schedule)
	if err != nil {
		logger.V(2).Info("Unparseable schedule", "cronjob", klog.KObj(cj), "schedule", cj.Spec.Schedule, "err", err)
		c.eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return nil, changed, nil
	}

	// 3. Which start is due?
	scheduled, missedStarts, err := nextScheduleTime(cj, now, sched)
	if missedStarts == manyMissed {
		c.eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
		logger.Info("too many missed times", "cronjob", klog.KObj(cj))
	}
	if err != nil {
		logger.V(2).Info("Invalid schedule", "cronjob", klog.KObj(cj), "schedule", cj.Spec.Schedule, "err", err)
		c.eventf(cj, corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return nil, changed, nil
	}
	next := requeue(nextScheduleTimeDuration(cj, now, sched))
	if scheduled == nil {
		logger.V(4).Info("No unmet start times", "cronjob", klog.KObj(cj))
		return next, changed, nil
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		logger.V(4).Info("Missed starting window", "cronjob", klog.KObj(cj))
		c.eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next, changed, nil
	}
	if inActiveListByName(cj, cj.Namespace, jobName(cj, *scheduled)) ||
		(cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled)) {
		logger.V(4).Info("Not starting job because the scheduled time is already processed", "cronjob", klog.KObj(cj), "schedule", scheduled)
		return next, changed, nil
	}

	// 4. The concurrency policy.
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(cj.Status.Active) > 0 {
		// The start is skipped, not postponed: lastScheduleTime is not moved, so a later
		// sync within the starting deadline may still start it.
		logger.V(4).Info("Not starting job because prior execution is still running and concurrency policy is Forbid", "cronjob", klog.KObj(cj))
		c.eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return next, changed, nil
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
		for _, ref := range slices.Clone(cj.Status.Active) {
			logger.V(4).Info("Deleting job that was still running at next scheduled start time", "job", klog.KRef(ref.Namespace, ref.Name))
			j, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				c.eventf(cj, corev1.EventTypeWarning, "FailedGet", "Get job: %v", err)
				return nil, changed, err
			}
			if !c.deleteJob(ctx, cj, j) {
				return nil, changed, fmt.Errorf("could not replace job %s/%s", j.Namespace, j.Name)
			}
			changed = true
		}
	}

	// 5. Start it.
	req, err := jobFromTemplate(cj, *scheduled)
	if err != nil {
		logger.Error(err, "Unable to make Job from template", "cronjob", klog.KObj(cj))
		return nil, changed, err
	}
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, req, metav1.CreateOptions{})
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, changed, err // nothing can be created in a namespace going away
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier sync whose status write was lost, or by someone else.
		existing, err := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		if err != nil {
			return nil, changed, err
		}
		if !metav1.IsControlledBy(existing, cj) || inActiveList(cj, existing.UID) {
			return nil, changed, nil
		}
		logger.Info("Job already exists", "cronjob", klog.KObj(cj), "job", klog.KObj(req))
		created = existing
	case err != nil:
		c.eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, changed, err
	default:
		logger.V(4).Info("Created Job", "job", klog.KObj(created), "cronjob", klog.KObj(cj))
		c.eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}
	cj.Status.Active = append(cj.Status.Active, jobReference(created))
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	return requeue(nextScheduleTimeDuration(cj, now, sched)), true, nil
}

// cleanupFinishedJobs deletes the oldest finished Jobs beyond the history limits and reports
// whether the status changed.
func (c *Controller) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	if cj.Spec.SuccessfulJobsHistoryLimit == nil && cj.Spec.FailedJobsHistoryLimit == nil {
		return false
	}
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch job.FinishedCondition(j) {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	changed := false
	if limit := cj.Spec.SuccessfulJobsHistoryLimit; limit != nil && c.removeOldestJobs(ctx, cj, succeeded, *limit) {
		changed = true
	}
	if limit := cj.Spec.FailedJobsHistoryLimit; limit != nil && c.removeOldestJobs(ctx, cj, failed, *limit) {
		changed = true
	}
	return changed
}

func (c *Controller) removeOldestJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, limit int32) bool {
	n := len(jobs) - int(limit)
	if n <= 0 {
		return false
	}
	klog.FromContext(ctx).V(4).Info("Cleaning up jobs from CronJob list", "deletejobnum", n, "jobnum", len(jobs), "cronjob", klog.KObj(cj))
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, byStartTime)
	changed := false
	for _, j := range jobs[:n] {
		if c.deleteJob(ctx, cj, j) {
			changed = true
		}
	}
	return changed
}

// deleteJob deletes j (its pods in the background) and takes it off status.active, with
// upstream's events; it reports whether it did.
func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, j *batchv1.Job) bool {
	err := c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil {
		c.eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		klog.FromContext(ctx).Error(err, "Error deleting job from cronjob", "job", klog.KObj(j), "cronjob", klog.KObj(cj))
		return false
	}
	deleteFromActiveList(cj, j.UID)
	c.eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
	return true
}
