package podcontrol

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	now  = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	then = metav1.NewTime(now.AddDate(0, -1, 0))
)

// podBuilder builds the pods of the ranking tests.
type podBuilder struct{ p *corev1.Pod }

func makePod(name string) podBuilder {
	return podBuilder{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}}
}

func (b podBuilder) node(n string) podBuilder { b.p.Spec.NodeName = n; return b }
func (b podBuilder) phase(p corev1.PodPhase) podBuilder {
	b.p.Status.Phase = p
	return b
}
func (b podBuilder) readySince(t metav1.Time) podBuilder {
	b.p.Status.Conditions = append(b.p.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t})
	return b
}
func (b podBuilder) restarts(n ...int32) podBuilder {
	for _, r := range n {
		b.p.Status.ContainerStatuses = append(b.p.Status.ContainerStatuses, corev1.ContainerStatus{RestartCount: r})
	}
	return b
}
func (b podBuilder) sidecarRestarts(n int32) podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: "sidecar", RestartPolicy: &always})
	b.p.Status.InitContainerStatuses = append(b.p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: "sidecar", RestartCount: n})
	return b
}
func (b podBuilder) created(t metav1.Time) podBuilder { b.p.CreationTimestamp = t; return b }
func (b podBuilder) cost(c string) podBuilder {
	b.p.Annotations = map[string]string{corev1.PodDeletionCost: c}
	return b
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// TestActivePodsOrder sorts shuffled pods and expects upstream's order (its
// TestSortingActivePods): each pod is to be deleted before the ones after it.
func TestActivePodsOrder(t *testing.T) {
	want := []*corev1.Pod{
		makePod("unscheduled").phase(corev1.PodPending).p,
		makePod("scheduledButPending").node("bar").phase(corev1.PodPending).p,
		makePod("unknownPhase").node("foo").phase(corev1.PodUnknown).p,
		makePod("runningButNotReady").node("foo").phase(corev1.PodRunning).p,
		makePod("runningNoLastTransitionTime").node("foo").phase(corev1.PodRunning).readySince(metav1.Time{}).restarts(3, 0).p,
		makePod("runningWithLastTransitionTime").node("foo").phase(corev1.PodRunning).readySince(now).restarts(3, 0).p,
		makePod("runningLongerTime").node("foo").phase(corev1.PodRunning).readySince(then).restarts(3, 0).p,
		makePod("lowerSidecarContainerRestartCount").node("foo").phase(corev1.PodRunning).readySince(then).restarts(2, 1).sidecarRestarts(2).created(now).p,
		makePod("lowerContainerRestartCount").node("foo").phase(corev1.PodRunning).readySince(then).restarts(2, 1).created(now).p,
		makePod("oldest").node("foo").phase(corev1.PodRunning).readySince(then).restarts(2, 1).created(then).p,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		pods := append([]*corev1.Pod{}, want...)
		r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		sort.Sort(ActivePods(pods))
		if diff := cmp.Diff(names(want), names(pods)); diff != "" {
			t.Fatalf("order (-want +got):\n%s", diff)
		}
	}
}

// TestActivePodsWithRanks checks pairs, as upstream's TestSortingActivePodsWithRanks: lesser
// is to be deleted before greater, whichever way round they are compared.
func TestActivePodsWithRanks(t *testing.T) {
	hours := func(h int) metav1.Time { return metav1.NewTime(now.Add(-time.Duration(h) * time.Hour)) }
	running := func(name string) podBuilder { return makePod(name).node("node").phase(corev1.PodRunning) }
	var (
		unscheduled         = makePod("unscheduled").phase(corev1.PodPending).p
		scheduledPending    = makePod("scheduled-pending").node("node").phase(corev1.PodPending).p
		unknownPhase        = makePod("unknown-phase").node("node").phase(corev1.PodUnknown).p
		notReady            = running("not-ready").p
		readyNoTime         = running("ready-no-time").readySince(metav1.Time{}).p
		readyNow            = running("ready-now").readySince(now).created(now).p
		readyThen           = running("ready-then").readySince(then).created(then).p
		highRestarts        = running("high-restarts").readySince(now).created(now).restarts(9001).p
		highSideRestarts    = running("high-side-restarts").readySince(now).created(now).restarts(9001).sidecarRestarts(9001).p
		readyNowCreatedThen = running("ready-now-created-then").readySince(now).created(then).p
		lowCost             = running("low-cost").readySince(now).created(then).cost("10").p
		highCost            = running("high-cost").readySince(now).created(then).cost("100").p
		negativeCost        = running("negative-cost").readySince(now).created(then).cost("-5").p
		invalidCost         = running("invalid-cost").readySince(now).created(then).cost("+5").p
		ready2h             = running("ready-2h").readySince(hours(2)).created(then).p
		ready5h             = running("ready-5h").readySince(hours(5)).created(then).p
		// 5 and 8 hours ago have the same base-2 logarithmic rank: their UIDs decide.
		ready8hA  = running("a-ready-8h").readySince(hours(8)).created(then).p
		created5h = makePod("b-created-5h").phase(corev1.PodPending).created(hours(5)).p
		created8h = makePod("a-created-8h").phase(corev1.PodPending).created(hours(8)).p
	)
	type ranked struct {
		pod  *corev1.Pod
		rank int
	}
	tests := []struct {
		lesser, greater ranked
	}{
		{ranked{unscheduled, 1}, ranked{scheduledPending, 2}},
		{ranked{unscheduled, 2}, ranked{scheduledPending, 1}},
		{ranked{scheduledPending, 1}, ranked{unknownPhase, 2}},
		{ranked{unknownPhase, 1}, ranked{notReady, 2}},
		{ranked{notReady, 1}, ranked{readyNoTime, 1}},
		{ranked{readyNoTime, 1}, ranked{readyNow, 1}},
		{ranked{readyNow, 2}, ranked{readyNoTime, 1}},
		{ranked{readyNow, 1}, ranked{readyThen, 1}},
		{ranked{readyNow, 2}, ranked{readyThen, 1}},
		{ranked{highRestarts, 1}, ranked{readyNow, 1}},
		{ranked{highSideRestarts, 1}, ranked{highRestarts, 1}},
		{ranked{readyNow, 2}, ranked{highRestarts, 1}},
		{ranked{readyNow, 1}, ranked{readyNowCreatedThen, 1}},
		{ranked{readyNowCreatedThen, 2}, ranked{readyNow, 1}},
		// The deletion cost comes before the rank.
		{ranked{lowCost, 1}, ranked{highCost, 2}},
		{ranked{negativeCost, 1}, ranked{lowCost, 2}},
		// An invalid cost counts as 0.
		{ranked{invalidCost, 1}, ranked{lowCost, 2}},
		{ranked{ready2h, 1}, ranked{ready5h, 1}},
		{ranked{ready8hA, 1}, ranked{ready5h, 1}},
		{ranked{created8h, 1}, ranked{created5h, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.lesser.pod.Name+"<"+tc.greater.pod.Name, func(t *testing.T) {
			s := ActivePodsWithRanks{
				Pods: []*corev1.Pod{tc.lesser.pod, tc.greater.pod},
				Rank: []int{tc.lesser.rank, tc.greater.rank},
				Now:  now,
			}
			if !s.Less(0, 1) {
				t.Errorf("%s (rank %d) is not less than %s (rank %d)", tc.lesser.pod.Name, tc.lesser.rank, tc.greater.pod.Name, tc.greater.rank)
			}
			if s.Less(1, 0) {
				t.Errorf("%s (rank %d) is less than %s (rank %d)", tc.greater.pod.Name, tc.greater.rank, tc.lesser.pod.Name, tc.lesser.rank)
			}
		})
	}

	// Equal pods are neither less than the other.
	same := ActivePodsWithRanks{Pods: []*corev1.Pod{unknownPhase, unknownPhase}, Rank: []int{1, 1}, Now: now}
	if same.Less(0, 1) || same.Less(1, 0) {
		t.Error("a pod is less than itself")
	}

	// Without Now, times compare exactly: the newer of 5 and 8 hours goes first whatever
	// the UIDs.
	exact := ActivePodsWithRanks{Pods: []*corev1.Pod{created5h, created8h}, Rank: []int{0, 0}}
	if !exact.Less(0, 1) {
		t.Error("without Now the pod created 5 hours ago is not less than the one created 8 hours ago")
	}
	// Swap keeps the ranks with their pods.
	exact.Rank[0] = 7
	exact.Swap(0, 1)
	if exact.Pods[1] != created5h || exact.Rank[1] != 7 {
		t.Error("Swap separated a pod from its rank")
	}
}

func TestDeletionCost(t *testing.T) {
	for value, want := range map[string]int32{
		"0": 0, "10": 10, "-10": -10, "2147483647": 2147483647,
		"+1": 0, "010": 0, "": 0, "x": 0, "2147483648": 0,
	} {
		if got := deletionCost(makePod("p").cost(value).p); got != want {
			t.Errorf("deletion cost %q: %d, want %d", value, got, want)
		}
	}
	if got := deletionCost(makePod("p").p); got != 0 {
		t.Errorf("no annotation: %d", got)
	}
}

func TestActiveAndTerminating(t *testing.T) {
	deleted := metav1.NewTime(now.Time)
	pods := []*corev1.Pod{
		makePod("pending").phase(corev1.PodPending).p,
		makePod("running").phase(corev1.PodRunning).p,
		makePod("succeeded").phase(corev1.PodSucceeded).p,
		makePod("failed").phase(corev1.PodFailed).p,
		makePod("deleting").phase(corev1.PodRunning).p,
		makePod("deleted-failed").phase(corev1.PodFailed).p,
	}
	pods[4].DeletionTimestamp = &deleted
	pods[5].DeletionTimestamp = &deleted
	if diff := cmp.Diff([]string{"pending", "running"}, names(FilterActivePods(pods))); diff != "" {
		t.Errorf("active (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"deleting"}, names(FilterTerminatingPods(pods))); diff != "" {
		t.Errorf("terminating (-want +got):\n%s", diff)
	}
}

func TestIsPodAvailable(t *testing.T) {
	tests := []struct {
		name            string
		pod             *corev1.Pod
		minReadySeconds int32
		want            bool
	}{
		{"not ready", makePod("p").p, 0, false},
		{"ready, no minReadySeconds", makePod("p").readySince(now).p, 0, true},
		{"ready for less than minReadySeconds", makePod("p").readySince(metav1.NewTime(now.Add(-9 * time.Second))).p, 10, false},
		{"ready for exactly minReadySeconds", makePod("p").readySince(metav1.NewTime(now.Add(-10 * time.Second))).p, 10, true},
		{"ready without a transition time", makePod("p").readySince(metav1.Time{}).p, 10, false},
	}
	for _, tc := range tests {
		if got := IsPodAvailable(tc.pod, tc.minReadySeconds, now.Time); got != tc.want {
			t.Errorf("%s: available %v, want %v", tc.name, got, tc.want)
		}
		if IsPodReady(tc.pod) != (len(tc.pod.Status.Conditions) > 0) {
			t.Errorf("%s: ready %v", tc.name, IsPodReady(tc.pod))
		}
	}
	notReady := makePod("p").p
	notReady.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if IsPodReady(notReady) {
		t.Error("a pod whose Ready condition is False is ready")
	}
}

func TestNextAvailabilityCheck(t *testing.T) {
	ago := func(s int) metav1.Time { return metav1.NewTime(now.Add(-time.Duration(s) * time.Second)) }
	pods := []*corev1.Pod{
		makePod("not-ready").p,
		makePod("ready-3s").readySince(ago(3)).p, // available in 7s
		makePod("ready-6s").readySince(ago(6)).p, // available in 4s
		makePod("available").readySince(ago(60)).p,
	}
	clock := clocktesting.NewFakePassiveClock(now.Time)
	if got := NextAvailabilityCheck(pods, 10, now.Time, clock); got == nil || *got != 4*time.Second {
		t.Fatalf("next check %v, want 4s", got)
	}
	// Time passed since the status was computed: the delay is measured from now.
	clock.SetTime(now.Add(time.Second))
	if got := NextAvailabilityCheck(pods, 10, now.Time, clock); got == nil || *got != 3*time.Second {
		t.Fatalf("next check %v, want 3s", got)
	}
	// Past the pod's check already: at once.
	clock.SetTime(now.Add(5 * time.Second))
	if got := NextAvailabilityCheck(pods, 10, now.Time, clock); got == nil || *got != 0 {
		t.Fatalf("next check %v, want 0", got)
	}
	if got := NextAvailabilityCheck(pods, 0, now.Time, clock); got != nil {
		t.Fatalf("next check %v without minReadySeconds", *got)
	}
	if got := NextAvailabilityCheck(pods[3:], 10, now.Time, clock); got != nil {
		t.Fatalf("next check %v with every pod available", *got)
	}
}
