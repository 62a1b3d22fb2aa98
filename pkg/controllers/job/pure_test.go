package job

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

func TestIntervalsParseAndString(t *testing.T) {
	cases := []struct {
		text        string
		completions int
		want        intervals
		wantText    string
		total       int
	}{
		{"", 10, nil, "", 0},
		{"0", 10, intervals{{0, 0}}, "0", 1},
		{"0-2,4", 10, intervals{{0, 2}, {4, 4}}, "0-2,4", 4},
		{"0,1", 10, intervals{{0, 1}}, "0,1", 2},
		{"0,1,2", 10, intervals{{0, 2}}, "0-2", 3},
		{"1-3,4-5,7", 10, intervals{{1, 5}, {7, 7}}, "1-5,7", 6},
		// Indexes at or past completions are dropped; a range is cut.
		{"0-2,5-9,12", 7, intervals{{0, 2}, {5, 6}}, "0-2,5,6", 5},
		// Corrupted parts are skipped.
		{"a,2,x-3,4-y,6", 10, intervals{{2, 2}, {6, 6}}, "2,6", 2},
	}
	for _, tc := range cases {
		got := parseIntervals(klog.Background(), tc.text, tc.completions)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseIntervals(%q, %d) = %v, want %v", tc.text, tc.completions, got, tc.want)
		}
		if s := got.String(); s != tc.wantText {
			t.Errorf("parseIntervals(%q).String() = %q, want %q", tc.text, s, tc.wantText)
		}
		if n := got.total(); n != tc.total {
			t.Errorf("parseIntervals(%q).total() = %d, want %d", tc.text, n, tc.total)
		}
	}
}

func TestIntervalsHasAndMerge(t *testing.T) {
	iv := intervals{{0, 2}, {5, 5}, {8, 10}}
	for ix, want := range map[int]bool{0: true, 2: true, 3: false, 4: false, 5: true, 6: false, 8: true, 10: true, 11: false, -1: false} {
		if got := iv.has(ix); got != want {
			t.Errorf("has(%d) = %v, want %v", ix, got, want)
		}
	}
	if got := iv.withIndexes([]int{3, 4, 7, 12}).String(); got != "0-5,7-10,12" {
		t.Errorf("withIndexes = %q, want 0-5,7-10,12", got)
	}
	if got := (intervals{{1, 1}}).merge(intervals{{0, 0}, {2, 4}}).String(); got != "0-4" {
		t.Errorf("merge = %q, want 0-4", got)
	}
	if got := intervals(nil).merge(nil); got != nil {
		t.Errorf("merge of nothing = %v", got)
	}
}

func indexedPod(ix int, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: itoa(ix)}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestPendingIndexes(t *testing.T) {
	job := &batchv1.Job{}
	active := []*corev1.Pod{indexedPod(1, corev1.PodRunning), indexedPod(4, corev1.PodRunning)}
	succeeded := intervals{{0, 0}, {5, 6}}
	failed := intervals{{3, 3}}
	got := pendingIndexes(job, active, active, succeeded, &failed, 10, 9)
	if want := []int{2, 7, 8}; !reflect.DeepEqual(got, want) {
		t.Errorf("pendingIndexes = %v, want %v", got, want)
	}
	got = pendingIndexes(job, active, active, succeeded, nil, 2, 9)
	if want := []int{2, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("pendingIndexes(count 2) = %v, want %v", got, want)
	}
}

func TestDuplicateIndexPods(t *testing.T) {
	a, b := indexedPod(0, corev1.PodRunning), indexedPod(0, corev1.PodPending)
	c := indexedPod(1, corev1.PodRunning)
	stray := indexedPod(7, corev1.PodRunning)
	none := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "none"}}
	rm, left := duplicateIndexPods([]*corev1.Pod{c, a, stray, b, none}, 3)
	// The pending duplicate goes (it ranks first for deletion), the running one stays.
	if len(rm) != 3 || !containsPod(rm, b) || !containsPod(rm, stray) || !containsPod(rm, none) {
		t.Errorf("rm = %v", rm)
	}
	if len(left) != 2 || !containsPod(left, a) || !containsPod(left, c) {
		t.Errorf("left = %v", left)
	}
}

func containsPod(pods []*corev1.Pod, p *corev1.Pod) bool {
	for _, q := range pods {
		if q == p {
			return true
		}
	}
	return false
}

func terminatedPod(phase corev1.PodPhase, exitCode int32, conditions ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-1"},
		Status: corev1.PodStatus{
			Phase:      phase,
			Conditions: conditions,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "ok", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
				{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode}}},
			},
		},
	}
}

func TestMatchPodFailurePolicy(t *testing.T) {
	action := func(a batchv1.PodFailurePolicyAction) *batchv1.PodFailurePolicyAction { return &a }
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{43}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{1, 2}}},
		{Action: batchv1.PodFailurePolicyActionFailJob, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.PodConditionType("Custom"), Status: corev1.ConditionTrue}}},
	}}
	disrupted := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}
	custom := corev1.PodCondition{Type: "Custom", Status: corev1.ConditionTrue}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		message string
		count   bool
		action  *batchv1.PodFailurePolicyAction
	}{
		{"disruption is ignored", terminatedPod(corev1.PodFailed, 42, disrupted), "", false, action(batchv1.PodFailurePolicyActionIgnore)},
		{"exit 42 fails the job", terminatedPod(corev1.PodFailed, 42), "Container main for pod ns/pod-1 failed with exit code 42 matching FailJob rule at index 1", true, action(batchv1.PodFailurePolicyActionFailJob)},
		{"exit 43 fails the index", terminatedPod(corev1.PodFailed, 43), "", true, action(batchv1.PodFailurePolicyActionFailIndex)},
		{"exit 5 counts", terminatedPod(corev1.PodFailed, 5), "", true, action(batchv1.PodFailurePolicyActionCount)},
		{"exit 1 matches nothing", terminatedPod(corev1.PodFailed, 1), "", true, nil},
		{"condition fails the job", terminatedPod(corev1.PodFailed, 1, custom), "Pod ns/pod-1 has condition Custom matching FailJob rule at index 4", true, action(batchv1.PodFailurePolicyActionFailJob)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := matchPodFailurePolicy(policy, tc.pod)
			if got := ptr.Deref(m.failJobMessage, ""); got != tc.message {
				t.Errorf("message = %q, want %q", got, tc.message)
			}
			if m.count != tc.count {
				t.Errorf("count = %v, want %v", m.count, tc.count)
			}
			if !reflect.DeepEqual(m.action, tc.action) {
				t.Errorf("action = %v, want %v", ptr.Deref(m.action, ""), ptr.Deref(tc.action, ""))
			}
		})
	}
	if m := matchPodFailurePolicy(nil, terminatedPod(corev1.PodFailed, 42)); !m.count || m.action != nil {
		t.Errorf("no policy: %+v", m)
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	logger := klog.Background()
	policy := &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
		{SucceededIndexes: ptr.To("0,2-3")},
		{SucceededIndexes: ptr.To("5-9"), SucceededCount: ptr.To[int32](2)},
		{SucceededCount: ptr.To[int32](6)},
	}}
	cases := []struct {
		succeeded string
		want      string
	}{
		{"", ""},
		{"0,2", ""},
		{"0,2,3", "Matched rules at index 0"},
		{"0-3", "Matched rules at index 0"},
		{"5", ""},
		{"5,9", "Matched rules at index 1"},
		{"1,4,6", ""},
		{"1,4,10-13", "Matched rules at index 2"},
	}
	for _, tc := range cases {
		msg, met := matchSuccessPolicy(logger, policy, 20, parseIntervals(logger, tc.succeeded, 20))
		if msg != tc.want || met != (tc.want != "") {
			t.Errorf("succeeded %q: (%q, %v), want %q", tc.succeeded, msg, met, tc.want)
		}
	}
}

func TestRemainingBackoff(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		failures int32
		ago      time.Duration
		want     time.Duration
	}{
		{0, 0, 0},
		{1, 0, 10 * time.Second},
		{1, 4 * time.Second, 6 * time.Second},
		{1, 11 * time.Second, 0},
		{2, 0, 20 * time.Second},
		{3, 0, 40 * time.Second},
		{7, 0, 10 * time.Minute}, // 640s capped
		{50, time.Minute, 9 * time.Minute},
	}
	for _, tc := range cases {
		last := now.Add(-tc.ago)
		if got := remainingBackoff(now, tc.failures, &last); got != tc.want {
			t.Errorf("remainingBackoff(%d failures, %v ago) = %v, want %v", tc.failures, tc.ago, got, tc.want)
		}
	}
}

func finishedAt(phase corev1.PodPhase, at time.Time) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{
		{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}}}}}}
}

func TestNextBackoffRecord(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	prev := backoffRecord{failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(at(0))}

	if got := nextBackoffRecord(prev, nil, nil); !reflect.DeepEqual(got, prev) {
		t.Errorf("nothing new: %+v", got)
	}
	got := nextBackoffRecord(prev, nil, []*corev1.Pod{finishedAt(corev1.PodFailed, at(20)), finishedAt(corev1.PodFailed, at(10))})
	if got.failuresAfterLastSuccess != 4 || !got.lastFailureTime.Equal(at(20)) {
		t.Errorf("two failures: %+v", got)
	}
	got = nextBackoffRecord(prev, []*corev1.Pod{finishedAt(corev1.PodSucceeded, at(15))},
		[]*corev1.Pod{finishedAt(corev1.PodFailed, at(10)), finishedAt(corev1.PodFailed, at(20)), finishedAt(corev1.PodFailed, at(30))})
	if got.failuresAfterLastSuccess != 2 || !got.lastFailureTime.Equal(at(30)) {
		t.Errorf("failures after a success: %+v", got)
	}
	got = nextBackoffRecord(prev, []*corev1.Pod{finishedAt(corev1.PodSucceeded, at(15))}, nil)
	if got.failuresAfterLastSuccess != 0 || got.lastFailureTime != nil {
		t.Errorf("a success resets: %+v", got)
	}
}

func TestIndexedGenerateName(t *testing.T) {
	if got := indexedGenerateName("pi", 3); got != "pi-3-" {
		t.Errorf("got %q", got)
	}
	long := "a123456789b123456789c123456789d123456789e123456789f123456789"
	got := indexedGenerateName(long, 12)
	if len(got) != maxGeneratedNameLength || got[len(got)-4:] != "-12-" {
		t.Errorf("long name: %q (%d)", got, len(got))
	}
}

var itoa = strconv.Itoa
