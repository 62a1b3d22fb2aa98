package job

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Pod tracking with finalizers: every pod the controller creates carries the
// batch.kubernetes.io/job-tracking finalizer, so that a finished pod stays until it has been
// counted. A sync first records finished pods' UIDs in status.uncountedTerminatedPods (one
// status write), then removes their finalizers, then moves them from the uncounted lists to
// status.succeeded / failed (a second write). A crash between the steps loses nothing: the
// next sync finds the pod still holding its finalizer, or its UID still uncounted.

func hasTrackingFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer)
}

// removeFinalizerPatch is the strategic merge patch that takes the tracking finalizer off
// pod, or nil if it has none.
func removeFinalizerPatch(pod *corev1.Pod) []byte {
	if !hasTrackingFinalizer(pod) {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
		},
	})
	return patch
}

// finalizerExpectations are, per Job key, the UIDs of pods whose finalizer removal this
// controller wrote and the pod informer has not shown yet; a sync skips them, so that a
// cache behind the patch does not count a pod twice.
type finalizerExpectations struct {
	mu   sync.Mutex
	uids map[string]sets.Set[types.UID]
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{uids: make(map[string]sets.Set[types.UID])}
}

func (e *finalizerExpectations) expect(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.uids[key]
	if !ok {
		s = sets.New[types.UID]()
		e.uids[key] = s
	}
	s.Insert(uids...)
}

func (e *finalizerExpectations) observed(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.uids[key]; ok {
		s.Delete(uid)
	}
}

// expected is a copy of key's set.
func (e *finalizerExpectations) expected(key string) sets.Set[types.UID] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.uids[key].Clone()
}

func (e *finalizerExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.uids, key)
}

// isPodFailed reports whether the pod counts as failed: Failed, or (unless
// podReplacementPolicy is Failed) being deleted before it succeeded, since a deleted pod may
// never reach a phase.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailedPods: with podReplacementPolicy Failed a pod is re-created only once the
// one it replaces has failed, not while it terminates.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	return job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed
}

// countablePods are the pods not yet counted: holding the tracking finalizer, not among
// uncounted or expectedRemovals, and for an Indexed Job with a valid index.
func countablePods(job *batchv1.Job, pods []*corev1.Pod, uncounted, expectedRemovals sets.Set[types.UID]) []*corev1.Pod {
	var result []*corev1.Pod
	for _, p := range pods {
		if !hasTrackingFinalizer(p) || uncounted.Has(p.UID) || expectedRemovals.Has(p.UID) {
			continue
		}
		if isIndexed(job) && !validIndex(job, p) {
			continue
		}
		result = append(result, p)
	}
	return result
}

// newFinishedPods are the pods that succeeded and failed since they were last counted.
func newFinishedPods(job *batchv1.Job, pods []*corev1.Pod, uncounted *uncountedPods, expectedRemovals sets.Set[types.UID]) (succeeded, failed []*corev1.Pod) {
	for _, p := range countablePods(job, pods, uncounted.succeeded, expectedRemovals) {
		if p.Status.Phase == corev1.PodSucceeded {
			succeeded = append(succeeded, p)
		}
	}
	for _, p := range countablePods(job, pods, uncounted.failed, expectedRemovals) {
		if isPodFailed(p, job) {
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// uncountedPods is status.uncountedTerminatedPods as sets.
type uncountedPods struct {
	succeeded, failed sets.Set[types.UID]
}

func newUncountedPods(in batchv1.UncountedTerminatedPods) *uncountedPods {
	return &uncountedPods{succeeded: sets.New(in.Succeeded...), failed: sets.New(in.Failed...)}
}

// countRemoved moves the uncounted UIDs whose pods no longer hold a finalizer (not in
// withFinalizer) to status.succeeded / failed, and reports whether status changed.
func countRemoved(status *batchv1.JobStatus, withFinalizer sets.Set[types.UID]) bool {
	changed := false
	u := status.UncountedTerminatedPods
	if kept := keep(u.Succeeded, withFinalizer); len(kept) != len(u.Succeeded) {
		status.Succeeded += int32(len(u.Succeeded) - len(kept))
		u.Succeeded = kept
		changed = true
	}
	if kept := keep(u.Failed, withFinalizer); len(kept) != len(u.Failed) {
		status.Failed += int32(len(u.Failed) - len(kept))
		u.Failed = kept
		changed = true
	}
	return changed
}

func keep(uids []types.UID, in sets.Set[types.UID]) []types.UID {
	var result []types.UID
	for _, uid := range uids {
		if in.Has(uid) {
			result = append(result, uid)
		}
	}
	return result
}

// Conditions.

func newCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type: t, Status: status, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
	}
}

func findCondition(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

// hasTrueCondition is the condition of type t when it is True.
func hasTrueCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	if c := findCondition(job.Status.Conditions, t); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

// ensureCondition sets the condition of type t to status, reason and message, adding it
// unless it is absent and would be False; it reports whether the list changed.
func ensureCondition(list []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findCondition(list, t); c != nil {
		if c.Status != status || c.Reason != reason || c.Message != message {
			*c = *newCondition(t, status, reason, message, now)
			return list, true
		}
		return list, false
	}
	if status != corev1.ConditionFalse {
		return append(list, *newCondition(t, status, reason, message, now)), true
	}
	return list, false
}

// finishedCondition is the Job's Complete or Failed condition type when one is True.
func finishedCondition(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

// IsFinished reports whether the Job has a True Complete or Failed condition. The CronJob
// and TTL-after-finished controllers use it too.
func IsFinished(j *batchv1.Job) bool {
	done, _ := finishedCondition(j)
	return done
}

// FinishedCondition is the type of the Job's True Complete or Failed condition, or "".
func FinishedCondition(j *batchv1.Job) batchv1.JobConditionType {
	_, t := finishedCondition(j)
	return t
}

func isSuspended(job *batchv1.Job) bool {
	return job.Spec.Suspend != nil && *job.Spec.Suspend
}
