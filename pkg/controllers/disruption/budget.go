package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

// DeletionTimeout is how long a pod the eviction API recorded in a budget's disruptedPods
// counts as going: past it, the pod is taken to have survived (its deletion failed) and is
// counted again.
const DeletionTimeout = 2 * time.Minute

// stalePodDisruptionTimeout is how long a DisruptionTarget condition may stand on a pod that
// is not being deleted before it is reset: the eviction (or preemption) that set it did not go
// through.
const stalePodDisruptionTimeout = 2 * time.Minute

// scaleFinder returns the scale of a pod's controller, identified by the UID it is counted
// under; found is false when the reference is not of a kind it knows or names nothing.
type scaleFinder func(ref *metav1.OwnerReference, namespace string) (uid types.UID, scale int32, found bool, err error)

// budgetCounts are the numbers of a budget's status.
type budgetCounts struct {
	expected, desiredHealthy int32
	// unmanaged names the selected pods without a controller (a percentage or
	// maxUnavailable cannot account for them).
	unmanaged []string
}

// expectedCounts computes a budget's expected pods and desired healthy count, as upstream's
// getExpectedPodCount: with maxUnavailable, or a percentage minAvailable, the expected count
// is the sum of the scales of the pods' controllers (each counted once) and the value is
// scaled against it, rounding up; with an integer minAvailable it is the number of pods.
func expectedCounts(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, find scaleFinder) (budgetCounts, error) {
	var c budgetCounts
	var err error
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if c.expected, c.unmanaged, err = expectedScale(pods, find); err != nil {
			return c, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(c.expected), true)
		if err != nil {
			return c, err
		}
		c.desiredHealthy = max(c.expected-int32(maxUnavailable), 0)
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		c.desiredHealthy = pdb.Spec.MinAvailable.IntVal
		c.expected = int32(len(pods))
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.String:
		if c.expected, c.unmanaged, err = expectedScale(pods, find); err != nil {
			return c, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(c.expected), true)
		if err != nil {
			return c, err
		}
		c.desiredHealthy = int32(minAvailable)
	}
	return c, nil
}

// expectedScale sums the scales of the pods' controllers, as upstream's getExpectedScale.
func expectedScale(pods []*corev1.Pod, find scaleFinder) (int32, []string, error) {
	scales := map[types.UID]int32{}
	var unmanaged []string
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if _, seen := scales[ref.UID]; seen {
			continue
		}
		uid, scale, found, err := find(ref, pod.Namespace)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		scales[uid] = scale
	}
	var expected int32
	for _, s := range scales {
		expected += s
	}
	return expected, unmanaged, nil
}

// disrupted is the outcome of pruning a budget's disruptedPods.
type disrupted struct {
	// pods are the entries still standing: pods present, not yet being deleted, recorded less
	// than DeletionTimeout ago.
	pods map[string]metav1.Time
	// recheck is when the earliest of them times out; nil if none stands.
	recheck *time.Time
	// notDeleted are the pods whose entry timed out without their deletion starting.
	notDeleted []*corev1.Pod
}

// pruneDisrupted is upstream's buildDisruptedPodMap: entries of pods gone or already being
// deleted are dropped, and so are those older than DeletionTimeout.
func pruneDisrupted(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) disrupted {
	d := disrupted{pods: map[string]metav1.Time{}}
	if pdb.Status.DisruptedPods == nil {
		return d
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok {
			continue
		}
		expiry := at.Add(DeletionTimeout)
		if expiry.Before(now) {
			d.notDeleted = append(d.notDeleted, pod)
			continue
		}
		if d.recheck == nil || expiry.Before(*d.recheck) {
			d.recheck = &expiry
		}
		d.pods[pod.Name] = at
	}
	return d
}

// countHealthy counts the ready pods neither being deleted nor recorded as disrupted.
func countHealthy(pods []*corev1.Pod, disruptedPods map[string]metav1.Time, now time.Time) int32 {
	var healthy int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disruptedPods[pod.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if podcontrol.IsPodReady(pod) {
			healthy++
		}
	}
	return healthy
}

// desiredStatus is pdb with the status the counts make, and whether that differs from the
// stored one (upstream's updatePdbStatus). No disruption is allowed while no pods are
// expected: a budget whose first pods appear is safe before this controller counted them.
func desiredStatus(pdb *policyv1.PodDisruptionBudget, healthy int32, c budgetCounts, disruptedPods map[string]metav1.Time) (*policyv1.PodDisruptionBudget, bool) {
	allowed := healthy - c.desiredHealthy
	if c.expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	s := pdb.Status
	if s.CurrentHealthy == healthy && s.DesiredHealthy == c.desiredHealthy && s.ExpectedPods == c.expected &&
		s.DisruptionsAllowed == allowed && apiequality.Semantic.DeepEqual(s.DisruptedPods, disruptedPods) &&
		s.ObservedGeneration == pdb.Generation && pdbhelper.ConditionsAreUpToDate(pdb) {
		return pdb, false
	}
	next := pdb.DeepCopy()
	next.Status = policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy:     healthy,
		DesiredHealthy:     c.desiredHealthy,
		ExpectedPods:       c.expected,
		DisruptionsAllowed: allowed,
		DisruptedPods:      disruptedPods,
		ObservedGeneration: pdb.Generation,
		Conditions:         next.Status.Conditions,
	}
	pdbhelper.UpdateDisruptionAllowedCondition(next)
	return next, true
}

// staleDisruption reports whether pod carries a DisruptionTarget condition that should be
// reset once it is stalePodDisruptionTimeout old, and how long until then (0: now). Those the
// kubelet set, and those of pods that are being deleted or finished, are never stale.
func staleDisruption(pod *corev1.Pod, now time.Time) (bool, time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(stalePodDisruptionTimeout-now.Sub(c.LastTransitionTime.Time), 0)
	}
	return false, 0
}
