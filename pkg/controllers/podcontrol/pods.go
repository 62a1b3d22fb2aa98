package podcontrol

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// IsPodActive reports whether p still counts towards its owner's replicas: not Succeeded or
// Failed, and not being deleted.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// IsPodTerminating reports whether p is being deleted but has not finished (not Succeeded or
// Failed): a ReplicaSet's status.terminatingReplicas counts these.
func IsPodTerminating(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp != nil
}

// FilterActivePods returns the active pods of pods.
func FilterActivePods(pods []*corev1.Pod) []*corev1.Pod {
	var active []*corev1.Pod
	for _, p := range pods {
		if IsPodActive(p) {
			active = append(active, p)
		}
	}
	return active
}

// FilterTerminatingPods returns the terminating pods of pods.
func FilterTerminatingPods(pods []*corev1.Pod) []*corev1.Pod {
	var terminating []*corev1.Pod
	for _, p := range pods {
		if IsPodTerminating(p) {
			terminating = append(terminating, p)
		}
	}
	return terminating
}

// readyCondition is p's Ready condition, or nil.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether p's Ready condition is True.
func IsPodReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether p has been ready for at least minReadySeconds at now (at
// once when minReadySeconds is 0), as upstream's podutil.IsPodAvailable.
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !IsPodReady(p) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	c := readyCondition(p)
	return !c.LastTransitionTime.IsZero() &&
		c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Compare(now) <= 0
}

// nextAvailabilityCheck is how long from now until p, ready but not yet for minReadySeconds,
// becomes available; nil if it is not ready, already available, or minReadySeconds is 0.
func nextAvailabilityCheck(p *corev1.Pod, minReadySeconds int32, now time.Time) *time.Duration {
	if !IsPodReady(p) || minReadySeconds <= 0 {
		return nil
	}
	c := readyCondition(p)
	if c.LastTransitionTime.IsZero() {
		return nil
	}
	next := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if next > 0 {
		return &next
	}
	return nil
}

// NextAvailabilityCheck is when an owner whose status was computed at evaluated should look
// at its pods again because one of them will have become available (the requeue of a
// ReplicaSet with minReadySeconds); nil when none will. As upstream's
// FindMinNextPodAvailabilityCheck, the pod is picked by evaluated, so that none that became
// available since is missed, and its delay is measured from clock's now (0 when that is past).
func NextAvailabilityCheck(pods []*corev1.Pod, minReadySeconds int32, evaluated time.Time, clock clock.PassiveClock) *time.Duration {
	var soonest *time.Duration
	var pod *corev1.Pod
	for _, p := range pods {
		if next := nextAvailabilityCheck(p, minReadySeconds, evaluated); next != nil && (soonest == nil || *next < *soonest) {
			soonest, pod = next, p
		}
	}
	if pod == nil {
		return nil
	}
	if next := nextAvailabilityCheck(pod, minReadySeconds, clock.Now()); next != nil {
		return next
	}
	var zero time.Duration
	return &zero
}

// phaseOrdinal ranks phases for deletion: pending first, then unknown, then running.
var phaseOrdinal = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// ActivePods sorts pods so that those best deleted first come first: upstream's ActivePods
// ranking, which ActivePodsWithRanks refines. In order, unassigned before assigned, pending
// before unknown before running, not ready before ready, ready for less time before more,
// more container restarts before fewer, newer (or never created) before older.
type ActivePods []*corev1.Pod

func (s ActivePods) Len() int      { return len(s) }
func (s ActivePods) Swap(i, j int) { s[i], s[j] = s[j], s[i] }

func (s ActivePods) Less(i, j int) bool {
	a, b := s[i], s[j]
	if less, ok := lessByState(a, b); ok {
		return less
	}
	if IsPodReady(a) && IsPodReady(b) {
		ra, rb := podReadyTime(a), podReadyTime(b)
		if !ra.Equal(rb) {
			return afterOrZero(ra, rb)
		}
	}
	if less, ok := compareMaxRestarts(a, b); ok {
		return less
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return afterOrZero(&a.CreationTimestamp, &b.CreationTimestamp)
	}
	return false
}

// ActivePodsWithRanks sorts Pods (and Rank with them, the two of equal length) so that those
// best deleted first come first, as upstream's ActivePodsWithRanks, applying each rule in turn
// until one tells the two apart:
//
//  1. a pod not assigned to a node before one that is;
//  2. pending before unknown before running;
//  3. not ready before ready;
//  4. lower controller.kubernetes.io/pod-deletion-cost before higher;
//  5. greater Rank before lower (a ReplicaSet ranks a pod by how many of its related pods
//     share its node, so that doubled-up pods go first);
//  6. both ready: ready for less time before more;
//  7. more container restarts (then more sidecar restarts) before fewer;
//  8. created more recently (or never) before older.
//
// With Now set, 6 and 8 compare times on a base-2 logarithmic scale of their age, and pods
// of equal scale by UID: among pods of about the same age the pick is spread pseudo-randomly
// rather than always the newest.
type ActivePodsWithRanks struct {
	Pods []*corev1.Pod
	Rank []int
	// Now is the reference of the logarithmic comparisons; zero compares times exactly.
	Now metav1.Time
}

func (s ActivePodsWithRanks) Len() int { return len(s.Pods) }

func (s ActivePodsWithRanks) Swap(i, j int) {
	s.Pods[i], s.Pods[j] = s.Pods[j], s.Pods[i]
	s.Rank[i], s.Rank[j] = s.Rank[j], s.Rank[i]
}

func (s ActivePodsWithRanks) Less(i, j int) bool {
	a, b := s.Pods[i], s.Pods[j]
	if less, ok := lessByState(a, b); ok {
		return less
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if s.Rank[i] != s.Rank[j] {
		return s.Rank[i] > s.Rank[j]
	}
	if IsPodReady(a) && IsPodReady(b) {
		ra, rb := podReadyTime(a), podReadyTime(b)
		if !ra.Equal(rb) {
			return s.newer(a, b, ra, rb)
		}
	}
	if less, ok := compareMaxRestarts(a, b); ok {
		return less
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return s.newer(a, b, &a.CreationTimestamp, &b.CreationTimestamp)
	}
	return false
}

// newer reports whether ta is to be ranked more recent than tb, on the logarithmic scale when
// Now and both times are set.
func (s ActivePodsWithRanks) newer(a, b *corev1.Pod, ta, tb *metav1.Time) bool {
	if s.Now.IsZero() || ta.IsZero() || tb.IsZero() {
		return afterOrZero(ta, tb)
	}
	if diff := logarithmicRankDiff(*ta, *tb, s.Now); diff != 0 {
		return diff < 0
	}
	return a.UID < b.UID
}

// lessByState is rules 1-3 of both rankings; ok is false when they do not tell a and b apart.
func lessByState(a, b *corev1.Pod) (less, ok bool) {
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == "", true
	}
	if pa, pb := phaseOrdinal[a.Status.Phase], phaseOrdinal[b.Status.Phase]; pa != pb {
		return pa < pb, true
	}
	if ra, rb := IsPodReady(a), IsPodReady(b); ra != rb {
		return !ra, true
	}
	return false, false
}

// deletionCost is p's controller.kubernetes.io/pod-deletion-cost, 0 when unset or invalid (a
// leading "+" or zero is invalid, as upstream's GetDeletionCostFromPodAnnotations).
func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[corev1.PodDeletionCost]
	if !ok || v == "" || v[0] == '+' || (v[0] == '0' && v != "0") {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// afterOrZero reports whether t1 is after t2, a zero time counting as after any other.
func afterOrZero(t1, t2 *metav1.Time) bool {
	if t1.IsZero() || t2.IsZero() {
		return t1.IsZero()
	}
	return t1.After(t2.Time)
}

// logarithmicRankDiff compares the base-2 logarithms of the ages of t1 and t2 at now.
func logarithmicRankDiff(t1, t2, now metav1.Time) int64 {
	rank := func(t metav1.Time) int64 {
		if d := now.Sub(t.Time); d > 0 {
			return int64(math.Log2(float64(d)))
		}
		return -1
	}
	return rank(t1) - rank(t2)
}

// podReadyTime is when p became ready, zero when it is not ready.
func podReadyTime(p *corev1.Pod) *metav1.Time {
	if c := readyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		return &c.LastTransitionTime
	}
	return &metav1.Time{}
}

// maxRestarts is the most restarts of p's regular containers and of its sidecars
// (restartable init containers).
func maxRestarts(p *corev1.Pod) (regular, sidecar int32) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := sets.New[string]()
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.Insert(c.Name)
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if sidecars.Has(c.Name) {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}

// compareMaxRestarts reports whether a restarted more than b; ok is false on a tie.
func compareMaxRestarts(a, b *corev1.Pod) (more, ok bool) {
	ra, sa := maxRestarts(a)
	rb, sb := maxRestarts(b)
	if ra != rb {
		return ra > rb, true
	}
	if sa != sb {
		return sa > sb, true
	}
	return false, false
}
