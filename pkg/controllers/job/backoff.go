package job

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Back-off between re-creating failed pods: after n failures since the last success the
// controller waits podFailureBackoff·2^(n-1), at most maxPodFailureBackoff, from the last
// failure before it creates pods again. Variables, so that tests can shorten them.
var (
	podFailureBackoff    = 10 * time.Second
	maxPodFailureBackoff = 10 * time.Minute
)

// backoffRecord is what the back-off is computed from, for one Job.
type backoffRecord struct {
	failuresAfterLastSuccess int32
	lastFailureTime          *time.Time
}

// backoffStore keeps the Jobs' back-off records, by Job key. It lives only in memory, as
// upstream's: a restarted controller starts with no back-off.
type backoffStore struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffStore() *backoffStore {
	return &backoffStore{records: make(map[string]backoffRecord)}
}

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[key] = r
}

func (s *backoffStore) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}

// nextBackoffRecord is prev after the newly finished pods: a success resets the count to the
// failures that finished after the last success.
func nextBackoffRecord(prev backoffRecord, succeeded, failed []*corev1.Pod) backoffRecord {
	sortByFinishedTime(succeeded)
	sortByFinishedTime(failed)
	if len(succeeded) == 0 {
		if len(failed) == 0 {
			return prev
		}
		last := finishedTime(failed[len(failed)-1])
		return backoffRecord{failuresAfterLastSuccess: prev.failuresAfterLastSuccess + int32(len(failed)), lastFailureTime: &last}
	}
	next := backoffRecord{}
	lastSuccess := finishedTime(succeeded[len(succeeded)-1])
	for i := len(failed) - 1; i >= 0; i-- {
		t := finishedTime(failed[i])
		if !t.After(lastSuccess) {
			break
		}
		if next.lastFailureTime == nil {
			next.lastFailureTime = &t
		}
		next.failuresAfterLastSuccess++
	}
	return next
}

// remaining is how long pod creation still waits.
func (r backoffRecord) remaining(now time.Time) time.Duration {
	return remainingBackoff(now, r.failuresAfterLastSuccess, r.lastFailureTime)
}

// remainingBackoff is how long is left of the back-off after failures failures, the last
// at lastFailure.
func remainingBackoff(now time.Time, failures int32, lastFailure *time.Time) time.Duration {
	if failures == 0 || lastFailure == nil {
		return 0
	}
	d := podFailureBackoff
	for i := 1; i < int(failures); i++ {
		d *= 2
		if d >= maxPodFailureBackoff {
			d = maxPodFailureBackoff
			break
		}
	}
	elapsed := now.Sub(*lastFailure)
	if d < elapsed {
		return 0
	}
	return d - elapsed
}

// remainingIndexBackoff is how long the index of lastFailed (its latest failed pod; nil when
// none failed) still waits before its pod is re-created, from its failure count annotations.
func remainingIndexBackoff(logger klog.Logger, now time.Time, lastFailed *corev1.Pod) time.Duration {
	if lastFailed == nil {
		return 0
	}
	t := finishedTime(lastFailed)
	return remainingBackoff(now, absoluteIndexFailureCount(logger, lastFailed)+1, &t)
}

func sortByFinishedTime(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return finishedTime(pods[i]).Before(finishedTime(pods[j])) })
}

// finishedTime is when the pod finished: its containers' latest finish (sidecars included)
// when all have one, else the last transition of Ready to False (the node agent's mark of a
// terminal phase), else its deletion less the grace period (a pod deleted by pod GC), else
// its creation.
func finishedTime(p *corev1.Pod) time.Time {
	if t := containersFinishedTime(p); t != nil {
		return *t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
				return c.LastTransitionTime.Time
			}
			break
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
	}
	return p.CreationTimestamp.Time
}

func containersFinishedTime(p *corev1.Pod) *time.Time {
	t := latestFinish(nil, p.Status.ContainerStatuses, nil)
	sidecars := sets.New[string]()
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.Insert(c.Name)
		}
	}
	return latestFinish(t, p.Status.InitContainerStatuses, sidecars.Has)
}

// latestFinish is the latest finish among the statuses that include keeps (nil: all) and
// prev, or nil if one of them has not finished.
func latestFinish(prev *time.Time, statuses []corev1.ContainerStatus, include func(string) bool) *time.Time {
	t := prev
	for _, cs := range statuses {
		if include != nil && !include(cs.Name) {
			continue
		}
		if cs.State.Terminated == nil || cs.State.Terminated.FinishedAt.IsZero() {
			return nil
		}
		if f := cs.State.Terminated.FinishedAt.Time; t == nil || t.Before(f) {
			t = &f
		}
	}
	return t
}
