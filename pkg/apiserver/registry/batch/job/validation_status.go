package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// This file holds the rules of jobs/status, upstream's ValidateJobUpdateStatus with the
// options of an API server whose JobManagedBy gate is on (locked on since 1.35): the status a
// controller (berth's or the one spec.managedBy names) writes must tell a consistent story.

// statusRules says which transition rules apply to one update. Most apply only when the
// fields they read changed, so that a status made inconsistent by a spec change (a scale
// down) can still be written by the controller that will fix it.
type statusRules struct {
	decreasingSucceeded, decreasingFailed, disablingTerminal           bool
	invalidCompleted, invalidFailed, failedOverlapsCompleted           bool
	completedForNonIndexed, failedWithoutBackoffLimitPerIndex          bool
	failedWithoutFailureTarget, completeWithoutSuccessCriteriaMet      bool
	finishedWithActive, finishedWithoutStart, finishedWithUncounted    bool
	startTimeForUnsuspended, completionBeforeStart, mutatingCompletion bool
	completeWithoutCompletionTime, completionTimeWithoutComplete       bool
	completeAndFailed, completeAndFailureTarget                        bool
	moreReadyThanActive, finishedWithTerminating                       bool
}

func rulesFor(j, old *batchv1.Job) statusRules {
	s, o := &j.Status, &old.Status
	changed := func(t batchv1.JobConditionType) bool {
		return conditionTrue(o.Conditions, t) != conditionTrue(s.Conditions, t)
	}
	finishedChanged := isFinished(old) != isFinished(j)
	completeChanged := changed(batchv1.JobComplete)
	failedChanged := changed(batchv1.JobFailed)
	completedChanged := o.CompletedIndexes != s.CompletedIndexes
	failedIndexesChanged := !ptr.Equal(o.FailedIndexes, s.FailedIndexes)
	activeChanged := o.Active != s.Active
	startChanged := !timeEqual(o.StartTime, s.StartTime)
	completionChanged := !timeEqual(o.CompletionTime, s.CompletionTime)
	zeroSuspended := ptr.Deref(j.Spec.Suspend, false) && ptr.Equal(j.Spec.Completions, ptr.To[int32](0))
	// A resume shows as JobSuspended going from True to False, possibly after spec.suspend
	// was already cleared.
	resuming := conditionTrue(o.Conditions, batchv1.JobSuspended) && conditionFalse(s.Conditions, batchv1.JobSuspended)
	indexed := ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	return statusRules{
		// An Indexed Job with completions == parallelism may be scaled down.
		decreasingSucceeded:               !indexed || !ptr.Equal(j.Spec.Completions, j.Spec.Parallelism),
		decreasingFailed:                  true,
		disablingTerminal:                 true,
		invalidCompleted:                  completedChanged,
		invalidFailed:                     failedIndexesChanged,
		completedForNonIndexed:            completedChanged,
		failedWithoutBackoffLimitPerIndex: failedIndexesChanged,
		failedOverlapsCompleted:           failedIndexesChanged || completedChanged,
		failedWithoutFailureTarget:        failedChanged || failedIndexesChanged,
		completeWithoutSuccessCriteriaMet: completeChanged || changed(batchv1.JobSuccessCriteriaMet),
		finishedWithActive:                finishedChanged || activeChanged,
		finishedWithoutStart:              (finishedChanged || startChanged) && !zeroSuspended,
		finishedWithUncounted:             finishedChanged || !apiequality.Semantic.DeepEqual(o.UncountedTerminatedPods, s.UncountedTerminatedPods),
		startTimeForUnsuspended:           startChanged && !resuming,
		completionBeforeStart:             startChanged || completionChanged,
		mutatingCompletion:                true,
		completionTimeWithoutComplete:     completeChanged || completionChanged,
		completeWithoutCompletionTime:     completeChanged || completionChanged,
		completeAndFailed:                 completeChanged || failedChanged,
		completeAndFailureTarget:          completeChanged || changed(batchv1.JobFailureTarget),
		moreReadyThanActive:               !ptr.Equal(o.Ready, s.Ready) || activeChanged,
		finishedWithTerminating:           finishedChanged || !ptr.Equal(o.Terminating, s.Terminating),
	}
}

// ValidateJobStatusUpdate validates a write of jobs/status.
func ValidateJobStatusUpdate(j, old *batchv1.Job) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	r := rulesFor(j, old)
	p := field.NewPath("status")
	errs = append(errs, validateStatus(j, r, p)...)
	conds := p.Child("conditions")
	if r.disablingTerminal {
		for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
			if conditionTrue(old.Status.Conditions, t) && !conditionTrue(j.Status.Conditions, t) {
				errs = append(errs, field.Invalid(conds, field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
			}
		}
	}
	if r.decreasingFailed && j.Status.Failed < old.Status.Failed {
		errs = append(errs, field.Invalid(p.Child("failed"), j.Status.Failed, "cannot decrease the failed counter"))
	}
	if r.decreasingSucceeded && j.Status.Succeeded < old.Status.Succeeded {
		errs = append(errs, field.Invalid(p.Child("succeeded"), j.Status.Succeeded, "cannot decrease the succeeded counter"))
	}
	// Clearing completionTime of an unfinished Job is fine; of a finished one, another rule refuses it.
	if r.mutatingCompletion && j.Status.CompletionTime != nil && old.Status.CompletionTime != nil && !timeEqual(j.Status.CompletionTime, old.Status.CompletionTime) {
		errs = append(errs, field.Invalid(p.Child("completionTime"), j.Status.CompletionTime, "field is immutable"))
	}
	if r.startTimeForUnsuspended && old.Status.StartTime != nil && !timeEqual(old.Status.StartTime, j.Status.StartTime) && !ptr.Deref(j.Spec.Suspend, false) {
		errs = append(errs, field.Invalid(p.Child("startTime"), j.Status.StartTime, "field is immutable for unsuspended job once set"))
	}
	if successCriteriaMet(old) && !successCriteriaMet(j) {
		errs = append(errs, field.Invalid(conds, field.OmitValueType{}, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if isComplete(old) && !successCriteriaMet(old) && successCriteriaMet(j) {
		errs = append(errs, field.Invalid(conds, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return errs
}

// validateStatus holds the rules on the new status alone.
func validateStatus(j *batchv1.Job, r statusRules, p *field.Path) field.ErrorList {
	s := &j.Status
	errs := apivalidation.ValidateNonnegativeField(int64(s.Active), p.Child("active"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.Succeeded), p.Child("succeeded"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.Failed), p.Child("failed"))...)
	if s.Ready != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.Ready), p.Child("ready"))...)
	}
	if s.Terminating != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.Terminating), p.Child("terminating"))...)
	}
	errs = append(errs, validateUncounted(s.UncountedTerminatedPods, p.Child("uncountedTerminatedPods"))...)
	conds := p.Child("conditions")
	complete, failed, finished := isComplete(j), conditionTrue(s.Conditions, batchv1.JobFailed), isFinished(j)
	failureTarget, successMet := conditionTrue(s.Conditions, batchv1.JobFailureTarget), successCriteriaMet(j)
	invalid := func(when bool, path *field.Path, value any, msg string) {
		if when {
			errs = append(errs, field.Invalid(path, value, msg))
		}
	}
	omit := field.OmitValueType{}
	invalid(r.completeAndFailed && complete && failed, conds, omit, "cannot set Complete=True and Failed=true conditions")
	invalid(r.completeAndFailureTarget && complete && failureTarget, conds, omit, "cannot set Complete=True and FailureTarget=true conditions")
	invalid(r.completionTimeWithoutComplete && s.CompletionTime != nil && !complete, p.Child("completionTime"), s.CompletionTime, "cannot set completionTime when there is no Complete=True condition")
	if r.completeWithoutCompletionTime && s.CompletionTime == nil && complete {
		errs = append(errs, field.Required(p.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	invalid(r.completionBeforeStart && s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime),
		p.Child("completionTime"), s.CompletionTime, "must be equal to or after `startTime`")
	invalid(r.failedWithoutFailureTarget && failed && !failureTarget, conds, omit, "cannot set Failed=True condition without the FailureTarget=true condition")
	invalid(r.completeWithoutSuccessCriteriaMet && complete && !successMet, conds, omit, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
	invalid(r.finishedWithActive && s.Active > 0 && finished, p.Child("active"), s.Active, "active>0 is invalid for finished job")
	if r.finishedWithoutStart && s.StartTime == nil && finished {
		errs = append(errs, field.Required(p.Child("startTime"), "startTime is required for finished job"))
	}
	invalid(r.finishedWithUncounted && finished && s.UncountedTerminatedPods != nil &&
		len(s.UncountedTerminatedPods.Failed)+len(s.UncountedTerminatedPods.Succeeded) > 0,
		p.Child("uncountedTerminatedPods"), s.UncountedTerminatedPods, "must be empty for finished job")
	errs = append(errs, validateStatusIndexes(j, r, p)...)
	invalid(r.finishedWithTerminating && ptr.Deref(s.Terminating, 0) > 0 && finished, p.Child("terminating"), s.Terminating, "terminating>0 is invalid for finished job")
	if r.moreReadyThanActive && s.Ready != nil && *s.Ready > s.Active {
		errs = append(errs, field.Invalid(p.Child("ready"), *s.Ready, "cannot set more ready pods than active"))
	}
	invalid(successMet && failed, conds, omit, "cannot set SuccessCriteriaMet=True and Failed=true conditions")
	invalid(successMet && failureTarget, conds, omit, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
	invalid(j.Spec.SuccessPolicy != nil && !successMet && complete, conds, omit, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")
	return errs
}

// validateStatusIndexes checks completedIndexes and failedIndexes: their format, that they
// belong to the kind of Job that has them, and that no index is in both.
func validateStatusIndexes(j *batchv1.Job, r statusRules, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := &j.Status
	if r.invalidCompleted && j.Spec.Completions != nil {
		if _, err := parseIndexes(s.CompletedIndexes, *j.Spec.Completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, fmt.Sprintf("error parsing completedIndexes: %s", err)))
		}
	}
	if r.invalidFailed && j.Spec.Completions != nil && j.Spec.BackoffLimitPerIndex != nil && s.FailedIndexes != nil {
		if _, err := parseIndexes(*s.FailedIndexes, *j.Spec.Completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("failedIndexes"), s.FailedIndexes, fmt.Sprintf("error parsing failedIndexes: %s", err)))
		}
	}
	indexed := ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	if r.completedForNonIndexed && s.CompletedIndexes != "" && !indexed {
		errs = append(errs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	// Non-indexed Jobs have no backoffLimitPerIndex, so this refuses their failedIndexes too.
	if r.failedWithoutBackoffLimitPerIndex && j.Spec.BackoffLimitPerIndex == nil && s.FailedIndexes != nil {
		errs = append(errs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if r.failedOverlapsCompleted && j.Spec.Completions != nil && s.FailedIndexes != nil {
		if err := indexesOverlap(s.CompletedIndexes, *s.FailedIndexes, *j.Spec.Completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, err.Error()))
		}
	}
	return errs
}

// validateUncounted: the uids of pods counted in neither succeeded nor failed yet are
// non-empty and listed once.
func validateUncounted(u *batchv1.UncountedTerminatedPods, p *field.Path) field.ErrorList {
	if u == nil {
		return nil
	}
	var errs field.ErrorList
	seen := sets.New[types.UID]()
	check := func(uids []types.UID, lp *field.Path) {
		for i, uid := range uids {
			switch {
			case uid == "":
				errs = append(errs, field.Invalid(lp.Index(i), uid, "must not be empty"))
			case seen.Has(uid):
				errs = append(errs, field.Duplicate(lp.Index(i), uid))
			default:
				seen.Insert(uid)
			}
		}
	}
	check(u.Succeeded, p.Child("succeeded"))
	check(u.Failed, p.Child("failed"))
	return errs
}

func conditionTrue(list []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	return conditionIs(list, t, corev1.ConditionTrue)
}

func conditionFalse(list []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	return conditionIs(list, t, corev1.ConditionFalse)
}

func conditionIs(list []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus) bool {
	for _, c := range list {
		if c.Type == t && c.Status == status {
			return true
		}
	}
	return false
}

func isComplete(j *batchv1.Job) bool { return conditionTrue(j.Status.Conditions, batchv1.JobComplete) }

func isFinished(j *batchv1.Job) bool {
	return isComplete(j) || conditionTrue(j.Status.Conditions, batchv1.JobFailed)
}

func successCriteriaMet(j *batchv1.Job) bool {
	return conditionTrue(j.Status.Conditions, batchv1.JobSuccessCriteriaMet)
}

// timeEqual compares two optional times (metav1.Time.Equal is nil-safe).
func timeEqual(a, b *metav1.Time) bool { return a.Equal(b) }
