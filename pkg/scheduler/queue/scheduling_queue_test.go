package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func TestPopOrder(t *testing.T) {
	tests := []struct {
		name string
		// pods are added in this order, one second apart.
		pods []*v1.Pod
		want []string
	}{
		{
			name: "higher priority first",
			pods: []*v1.Pod{
				st.MakePod().Name("low").Priority(1).Obj(),
				st.MakePod().Name("high").Priority(100).Obj(),
				st.MakePod().Name("mid").Priority(10).Obj(),
			},
			want: []string{"high", "mid", "low"},
		},
		{
			name: "equal priority: first come first",
			pods: []*v1.Pod{
				st.MakePod().Name("a").Obj(),
				st.MakePod().Name("b").Obj(),
				st.MakePod().Name("c").Obj(),
			},
			want: []string{"a", "b", "c"},
		},
		{
			name: "priority, then time",
			pods: []*v1.Pod{
				st.MakePod().Name("old-low").Priority(1).Obj(),
				st.MakePod().Name("old-high").Priority(5).Obj(),
				st.MakePod().Name("new-high").Priority(5).Obj(),
				st.MakePod().Name("new-low").Priority(1).Obj(),
				st.MakePod().Name("none").Obj(),
			},
			want: []string{"old-high", "new-high", "old-low", "new-low", "none"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, fc, logger := newTestQueue(t)
			for _, pod := range tt.pods {
				q.Add(logger, pod)
				fc.Step(time.Second)
			}
			var got []string
			for range tt.pods {
				pInfo, err := q.Pop(logger)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, pInfo.Pod.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("popped %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPopStartsACycle(t *testing.T) {
	q, fc, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	fc.Step(time.Second)
	first := mustPop(t, q, logger, pod)
	if q.SchedulingCycle() != 1 || first.Attempts != 1 || !first.InitialAttemptTimestamp.Equal(start.Add(time.Second)) {
		t.Fatalf("after the first Pop: cycle %d, attempts %d, initial attempt %v", q.SchedulingCycle(), first.Attempts, first.InitialAttemptTimestamp)
	}
	fail(t, q, logger, first)
	fc.Step(time.Minute)
	q.flushBackoffQCompleted(logger)
	second := mustPop(t, q, logger, pod)
	if q.SchedulingCycle() != 2 || second.Attempts != 2 || !second.InitialAttemptTimestamp.Equal(start.Add(time.Second)) {
		t.Errorf("after the second Pop: cycle %d, attempts %d, initial attempt %v", q.SchedulingCycle(), second.Attempts, second.InitialAttemptTimestamp)
	}
}

func TestBackoffDuration(t *testing.T) {
	tests := []struct {
		attempts int
		want     time.Duration
	}{
		{1, 1 * time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second},
		{5, 10 * time.Second}, {6, 10 * time.Second}, {100, 10 * time.Second},
	}
	q, _, _ := newTestQueue(t)
	for _, tt := range tests {
		if got := q.backoffDuration(tt.attempts); got != tt.want {
			t.Errorf("backoffDuration(%d) = %v, want %v", tt.attempts, got, tt.want)
		}
	}
}

// TestBackoffFlush fails a pod again and again and checks that it leaves backoffQ exactly when
// its back-off (1 s, 2 s, 4 s, 8 s, then 10 s) is over.
func TestBackoffFlush(t *testing.T) {
	q, fc, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	for i, backoff := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		popAndFail(t, q, logger, pod) // an Error: straight to backoffQ
		if got := where(q, pod); got != QueueBackoff {
			t.Fatalf("attempt %d: pod in %q, want backoff", i+1, got)
		}
		fc.Step(backoff - time.Millisecond)
		q.flushBackoffQCompleted(logger)
		if got := where(q, pod); got != QueueBackoff {
			t.Fatalf("attempt %d: %v into a back-off of %v, pod in %q", i+1, backoff-time.Millisecond, backoff, got)
		}
		fc.Step(time.Millisecond)
		q.flushBackoffQCompleted(logger)
		if got := where(q, pod); got != QueueActive {
			t.Fatalf("attempt %d: back-off of %v over, pod in %q", i+1, backoff, got)
		}
	}
}

func TestBackoffQOrder(t *testing.T) {
	q, fc, logger := newTestQueue(t)
	a, b := st.MakePod().Name("a").Priority(2).Obj(), st.MakePod().Name("b").Priority(1).Obj()
	q.Add(logger, a)
	q.Add(logger, b)
	// a fails twice (2 s back-off), b once (1 s): b's back-off ends first.
	popAndFail(t, q, logger, a)
	fc.Step(time.Second)
	q.flushBackoffQCompleted(logger)
	popAndFail(t, q, logger, a)
	popAndFail(t, q, logger, b)
	if got := q.backoffQ.Peek().Pod.Name; got != "b" {
		t.Errorf("backoffQ head is %s, want b", got)
	}
	fc.Step(time.Second)
	q.flushBackoffQCompleted(logger)
	if where(q, a) != QueueBackoff || where(q, b) != QueueActive {
		t.Errorf("after 1 s: a in %q, b in %q; want backoff, active", where(q, a), where(q, b))
	}
}

func TestNoBackoff(t *testing.T) {
	q, _, logger := newTestQueue(t, WithPodMaxBackoffDuration(0))
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	popAndFail(t, q, logger, pod)
	if got := where(q, pod); got != QueueActive {
		t.Errorf("with back-off disabled, a failed pod is in %q, want active", got)
	}
}

func TestGatedPod(t *testing.T) {
	rec := newFakeRecorder()
	q, fc, logger := newTestQueue(t,
		WithPreEnqueuePluginMap(map[string][]framework.PreEnqueuePlugin{v1.DefaultSchedulerName: {gatePlugin{}}}),
		hintsFor(QueueingHintMap{{Resource: framework.Node, ActionType: framework.Add}: {{PluginName: "NodeThing"}}}),
		WithMetricsRecorder(rec))
	gated := st.MakePod().Name("gated").SchedulingGates("example.com/wait").Obj()
	q.Add(logger, gated)
	if got := where(q, gated); got != QueueGated {
		t.Fatalf("gated pod in %q, want gated", got)
	}
	if pInfo := q.unschedulablePods.get(gated.UID); pInfo.GatingPlugin != "SchedulingGates" || !pInfo.UnschedulablePlugins.Has("SchedulingGates") {
		t.Errorf("gating plugin %q, unschedulable plugins %v", pInfo.GatingPlugin, pInfo.UnschedulablePlugins)
	}
	if _, summary := q.PendingPods(); summary != "activeQ:0; backoffQ:0; unschedulablePods:1" {
		t.Errorf("summary %q", summary)
	}
	if got := rec.pendingCounts(); fmt.Sprint(got) != "map[gated:1]" {
		t.Errorf("pending pods %v, want gated:1", got)
	}

	// Nothing but the removal of its gates lets it in: not an event, not time, not a status change.
	q.MoveAllToActiveOrBackoffQueue(logger, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}, nil, nil, nil)
	q.Activate(logger, map[string]*v1.Pod{"gated": gated})
	fc.Step(DefaultPodMaxInUnschedulablePodsDuration + time.Minute)
	q.flushUnschedulablePodsLeftover(logger)
	statusOnly := gated.DeepCopy()
	statusOnly.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(logger, gated, statusOnly)
	labelled := statusOnly.DeepCopy()
	labelled.Labels = map[string]string{"new": "label"}
	q.Update(logger, statusOnly, labelled)
	if got := where(q, gated); got != QueueGated {
		t.Fatalf("gated pod moved to %q", got)
	}

	ungated := labelled.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	q.Update(logger, labelled, ungated)
	if got := where(q, gated); got != QueueActive {
		t.Fatalf("pod without gates in %q, want active", got)
	}
	if got := rec.pendingCounts(); fmt.Sprint(got) != "map[active:1]" {
		t.Errorf("pending pods %v, want active:1", got)
	}
	pInfo := mustPop(t, q, logger, gated)
	if len(pInfo.Pod.Spec.SchedulingGates) != 0 || pInfo.GatingPlugin != "" {
		t.Errorf("popped the old version, or still gated by %q", pInfo.GatingPlugin)
	}
}

const (
	nodePlugin  = "NodeThing"
	otherPlugin = "OtherThing"
)

var (
	nodeAdd   = framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add, Label: "NodeAdd"}
	nodeTaint = framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeTaint, Label: "NodeTaintChange"}
	podDelete = framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete, Label: "AssignedPodDelete"}
)

func TestMoveAllToActiveOrBackoffQueue(t *testing.T) {
	tests := []struct {
		name     string
		hint     framework.QueueingHintFn // nodePlugin's hint for Node/Add
		rejected []string                 // the pod's UnschedulablePlugins
		event    framework.ClusterEvent
		preCheck func(*v1.Pod) bool
		// wait is how long after the failure the event comes (the back-off is 1 s).
		wait time.Duration
		want string
	}{
		{name: "matching event, still backing off", rejected: []string{nodePlugin}, event: nodeAdd, want: QueueBackoff},
		{name: "matching event, back-off over", rejected: []string{nodePlugin}, event: nodeAdd, wait: 2 * time.Second, want: QueueActive},
		{name: "unrelated event of the same resource", rejected: []string{nodePlugin}, event: nodeTaint, wait: 2 * time.Second, want: QueueUnschedulable},
		{name: "unrelated resource", rejected: []string{nodePlugin}, event: podDelete, wait: 2 * time.Second, want: QueueUnschedulable},
		{name: "event registered by another plugin", rejected: []string{otherPlugin}, event: nodeAdd, wait: 2 * time.Second, want: QueueUnschedulable},
		{name: "one of several rejecting plugins", rejected: []string{otherPlugin, nodePlugin}, event: nodeAdd, wait: 2 * time.Second, want: QueueActive},
		{name: "hint says Queue", hint: hintFn(framework.Queue, nil), rejected: []string{nodePlugin}, event: nodeAdd, wait: 2 * time.Second, want: QueueActive},
		{name: "hint says QueueSkip", hint: hintFn(framework.QueueSkip, nil), rejected: []string{nodePlugin}, event: nodeAdd, wait: 2 * time.Second, want: QueueUnschedulable},
		{name: "hint fails: queued anyway", hint: hintFn(framework.QueueSkip, errors.New("boom")), rejected: []string{nodePlugin}, event: nodeAdd, wait: 2 * time.Second, want: QueueActive},
		{name: "preCheck refuses", rejected: []string{nodePlugin}, event: nodeAdd, preCheck: func(*v1.Pod) bool { return false }, wait: 2 * time.Second, want: QueueUnschedulable},
		{name: "wildcard event moves any pod", rejected: []string{otherPlugin}, event: EventForceActivate, wait: 2 * time.Second, want: QueueActive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, fc, logger := newTestQueue(t, hintsFor(QueueingHintMap{
				{Resource: framework.Node, ActionType: framework.Add}: {{PluginName: nodePlugin, QueueingHintFn: tt.hint}},
				{Resource: framework.Pod, ActionType: framework.Add}:  {{PluginName: otherPlugin}},
			}))
			pod := st.MakePod().Name("p").Obj()
			q.Add(logger, pod)
			popAndFail(t, q, logger, pod, tt.rejected...)
			if got := where(q, pod); got != QueueUnschedulable {
				t.Fatalf("after failing, pod in %q", got)
			}
			fc.Step(tt.wait)
			q.MoveAllToActiveOrBackoffQueue(logger, tt.event, nil, st.MakeNode().Name("n").Obj(), tt.preCheck)
			if got := where(q, pod); got != tt.want {
				t.Errorf("pod in %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHintArguments checks that a hint sees the rejected pod and the event's objects.
func TestHintArguments(t *testing.T) {
	pod := st.MakePod().Name("p").Obj()
	oldNode, newNode := st.MakeNode().Name("old").Obj(), st.MakeNode().Name("new").Obj()
	var calls int
	q, _, logger := newTestQueue(t, hintsFor(QueueingHintMap{nodeAdd: {{PluginName: nodePlugin,
		QueueingHintFn: func(_ klog.Logger, p *v1.Pod, o, n interface{}) (framework.QueueingHint, error) {
			calls++
			if p.UID != pod.UID || o != oldNode || n != newNode {
				t.Errorf("hint called with %v, %v, %v", p.Name, o, n)
			}
			return framework.QueueSkip, nil
		}}}}))
	q.Add(logger, pod)
	popAndFail(t, q, logger, pod, nodePlugin)
	q.MoveAllToActiveOrBackoffQueue(logger, nodeAdd, oldNode, newNode, nil)
	if calls != 1 {
		t.Errorf("hint called %d times, want 1", calls)
	}
}

func TestNoHintMapMovesEveryRejectedPod(t *testing.T) {
	q, fc, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	popAndFail(t, q, logger, pod, otherPlugin)
	fc.Step(2 * time.Second)
	q.MoveAllToActiveOrBackoffQueue(logger, nodeTaint, nil, nil, nil)
	if got := where(q, pod); got != QueueActive {
		t.Errorf("pod in %q, want active", got)
	}
}

// TestAddUnschedulableIfNotPresent covers where a pod goes back after a failed attempt, given
// what happened while it was in flight.
func TestAddUnschedulableIfNotPresent(t *testing.T) {
	hints := hintsFor(QueueingHintMap{
		{Resource: framework.Node, ActionType: framework.Add}: {
			{PluginName: nodePlugin},
			{PluginName: "Waiter"},
		},
		{Resource: framework.Node, ActionType: framework.UpdateNodeTaint}: {
			{PluginName: nodePlugin, QueueingHintFn: hintFn(framework.QueueSkip, nil)},
		},
	})
	tests := []struct {
		name     string
		rejected []string
		pending  []string
		// during runs while the pod is in flight.
		during func(q *PriorityQueue, pod *v1.Pod)
		// before runs before the pod is popped.
		before func(q *PriorityQueue, pod *v1.Pod)
		want   string
	}{
		{name: "nothing happened", rejected: []string{nodePlugin}, want: QueueUnschedulable},
		{name: "an Error goes to backoffQ", want: QueueBackoff},
		{name: "a matching event came", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, _ *v1.Pod) {
				q.MoveAllToActiveOrBackoffQueue(klog.Background(), nodeAdd, nil, nil, nil)
			},
			want: QueueBackoff},
		{name: "an unrelated event came", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, _ *v1.Pod) {
				q.MoveAllToActiveOrBackoffQueue(klog.Background(), podDelete, nil, nil, nil)
			},
			want: QueueUnschedulable},
		{name: "a matching event whose hint skips came", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, _ *v1.Pod) {
				q.MoveAllToActiveOrBackoffQueue(klog.Background(), nodeTaint, nil, nil, nil)
			},
			want: QueueUnschedulable},
		{name: "a matching event came before the attempt", rejected: []string{nodePlugin},
			before: func(q *PriorityQueue, _ *v1.Pod) {
				q.MoveAllToActiveOrBackoffQueue(klog.Background(), nodeAdd, nil, nil, nil)
			},
			want: QueueUnschedulable},
		{name: "a Pending plugin's event came: activeQ at once", pending: []string{"Waiter"},
			during: func(q *PriorityQueue, _ *v1.Pod) {
				q.MoveAllToActiveOrBackoffQueue(klog.Background(), nodeAdd, nil, nil, nil)
			},
			want: QueueActive},
		{name: "activated while in flight", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, pod *v1.Pod) { q.Activate(klog.Background(), map[string]*v1.Pod{pod.Name: pod}) },
			want:   QueueBackoff},
		{name: "another pod activated while in flight", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, _ *v1.Pod) {
				q.Activate(klog.Background(), map[string]*v1.Pod{"x": st.MakePod().Name("x").Obj()})
			},
			want: QueueUnschedulable},
		{name: "its spec changed while in flight", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, pod *v1.Pod) {
				newPod := pod.DeepCopy()
				newPod.Labels = map[string]string{"a": "b"}
				q.Update(klog.Background(), pod, newPod)
			},
			want: QueueBackoff},
		{name: "only its status changed while in flight", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, pod *v1.Pod) {
				newPod := pod.DeepCopy()
				newPod.Status.NominatedNodeName = "n"
				newPod.ResourceVersion = "2"
				q.Update(klog.Background(), pod, newPod)
			},
			want: QueueUnschedulable},
		{name: "deleted while in flight: dropped", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, pod *v1.Pod) { q.Delete(pod) },
			want:   ""},
		{name: "the leftover flush moved others while in flight", rejected: []string{nodePlugin},
			during: func(q *PriorityQueue, _ *v1.Pod) {
				q.movePods(klog.Background(), func(func(*framework.QueuedPodInfo) bool) {}, &clusterEvent{event: EventUnschedulableTimeout})
			},
			want: QueueBackoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _, logger := newTestQueue(t, hints)
			pod := st.MakePod().Name("p").Obj()
			q.Add(logger, pod)
			if tt.before != nil {
				tt.before(q, pod)
			}
			pInfo := mustPop(t, q, logger, pod)
			if tt.during != nil {
				tt.during(q, pod)
			}
			pInfo.UnschedulablePlugins.Insert(tt.rejected...)
			pInfo.PendingPlugins.Insert(tt.pending...)
			if err := q.AddUnschedulableIfNotPresent(logger, pInfo, q.SchedulingCycle()); err != nil {
				t.Fatal(err)
			}
			if got := where(q, pod); got != tt.want {
				t.Errorf("pod in %q, want %q", got, tt.want)
			}
			if len(q.inFlight.pods) != 0 || q.inFlight.events.Len() != 0 {
				t.Errorf("in-flight bookkeeping left: %d pods, %d entries", len(q.inFlight.pods), q.inFlight.events.Len())
			}
		})
	}
}

func TestAddUnschedulableIfNotPresentTwice(t *testing.T) {
	q, _, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	pInfo := popAndFail(t, q, logger, pod, nodePlugin)
	if err := q.AddUnschedulableIfNotPresent(logger, pInfo, q.SchedulingCycle()); err == nil {
		t.Error("handing back a pod already queued succeeded")
	}
}

// TestInFlightEventsAreDropped checks that events are kept only while a pod that may need
// them is in flight.
func TestInFlightEventsAreDropped(t *testing.T) {
	q, _, logger := newTestQueue(t)
	a, b := st.MakePod().Name("a").Priority(2).Obj(), st.MakePod().Name("b").Priority(1).Obj()
	q.MoveAllToActiveOrBackoffQueue(logger, nodeAdd, nil, nil, nil)
	if q.inFlight.events.Len() != 0 {
		t.Fatal("an event was kept with no pod in flight")
	}
	q.Add(logger, a)
	q.Add(logger, b)
	mustPop(t, q, logger, a)
	q.MoveAllToActiveOrBackoffQueue(logger, nodeAdd, nil, nil, nil)
	mustPop(t, q, logger, b)
	q.MoveAllToActiveOrBackoffQueue(logger, nodeAdd, nil, nil, nil)
	if got := q.inFlight.events.Len(); got != 4 {
		t.Fatalf("%d entries, want 4 (a, event, b, event)", got)
	}
	q.Done(b.UID)
	if got := q.inFlight.events.Len(); got != 3 {
		t.Fatalf("after b is done: %d entries, want 3", got)
	}
	q.Done(a.UID)
	if got := q.inFlight.events.Len(); got != 0 {
		t.Fatalf("after a is done: %d entries, want 0", got)
	}
}

func TestUnschedulableLeftoverFlush(t *testing.T) {
	q, fc, logger := newTestQueue(t, hintsFor(QueueingHintMap{nodeAdd: {{PluginName: nodePlugin}}}))
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	popAndFail(t, q, logger, pod, nodePlugin)
	fc.Step(DefaultPodMaxInUnschedulablePodsDuration)
	q.flushUnschedulablePodsLeftover(logger)
	if got := where(q, pod); got != QueueUnschedulable {
		t.Fatalf("after exactly 5 min, pod in %q", got)
	}
	fc.Step(time.Second)
	q.flushUnschedulablePodsLeftover(logger)
	if got := where(q, pod); got != QueueActive {
		t.Fatalf("after 5 min 1 s, pod in %q, want active", got)
	}
}

func TestLeftoverFlushRespectsBackoff(t *testing.T) {
	q, fc, logger := newTestQueue(t, WithPodMaxInUnschedulablePodsDuration(time.Second), WithPodInitialBackoffDuration(time.Minute), WithPodMaxBackoffDuration(time.Minute))
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	popAndFail(t, q, logger, pod, nodePlugin)
	fc.Step(2 * time.Second)
	q.flushUnschedulablePodsLeftover(logger)
	if got := where(q, pod); got != QueueBackoff {
		t.Fatalf("pod in %q, want backoff", got)
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, q *PriorityQueue, pod *v1.Pod)
		in    string
	}{
		{name: "activeQ", setup: func(*testing.T, *PriorityQueue, *v1.Pod) {}, in: QueueActive},
		{name: "backoffQ", setup: func(t *testing.T, q *PriorityQueue, pod *v1.Pod) {
			popAndFail(t, q, klog.Background(), pod)
		}, in: QueueBackoff},
		{name: "unschedulablePods", setup: func(t *testing.T, q *PriorityQueue, pod *v1.Pod) {
			popAndFail(t, q, klog.Background(), pod, nodePlugin)
		}, in: QueueUnschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newFakeRecorder()
			q, _, logger := newTestQueue(t, WithMetricsRecorder(rec))
			pod := st.MakePod().Name("p").NominatedNode("n1").Obj()
			q.Add(logger, pod)
			tt.setup(t, q, pod)
			if got := where(q, pod); got != tt.in {
				t.Fatalf("pod in %q, want %q", got, tt.in)
			}
			if len(q.NominatedPodsForNode("n1")) != 1 {
				t.Fatal("the pod's nomination was not recorded")
			}
			q.Delete(pod)
			if got := where(q, pod); got != "" {
				t.Errorf("deleted pod still in %q", got)
			}
			if pods, summary := q.PendingPods(); len(pods) != 0 || summary != "activeQ:0; backoffQ:0; unschedulablePods:0" {
				t.Errorf("pending: %d pods, %q", len(pods), summary)
			}
			if got := q.NominatedPodsForNode("n1"); len(got) != 0 {
				t.Errorf("deleted pod still nominated")
			}
			if got := rec.pendingCounts(); len(got) != 0 {
				t.Errorf("pending pods gauges %v, want all 0", got)
			}
		})
	}
	t.Run("gated", func(t *testing.T) {
		rec := newFakeRecorder()
		q, _, logger := newTestQueue(t, WithMetricsRecorder(rec),
			WithPreEnqueuePluginMap(map[string][]framework.PreEnqueuePlugin{v1.DefaultSchedulerName: {gatePlugin{}}}))
		pod := st.MakePod().Name("p").SchedulingGates("g").Obj()
		q.Add(logger, pod)
		q.Delete(pod)
		if got := where(q, pod); got != "" || q.unschedulablePods.gated != 0 || len(rec.pendingCounts()) != 0 {
			t.Errorf("after Delete: pod in %q, gated count %d, gauges %v", got, q.unschedulablePods.gated, rec.pendingCounts())
		}
	})
}

func TestPopBlocksUntilAddAndCloseWakesIt(t *testing.T) {
	q, _, logger := newTestQueue(t)
	type result struct {
		pInfo *framework.QueuedPodInfo
		err   error
	}
	popped := make(chan result, 1)
	pop := func() {
		pInfo, err := q.Pop(logger)
		popped <- result{pInfo, err}
	}
	receive := func() result {
		select {
		case r := <-popped:
			return r
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatal("Pop did not return")
			return result{}
		}
	}

	go pop()
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	// The queue was empty, so the only way Pop can return is with the pod added after it.
	if r := receive(); r.err != nil || r.pInfo.Pod.UID != pod.UID {
		t.Fatalf("Pop returned %v, %v", r.pInfo, r.err)
	}

	go pop()
	q.Close()
	if r := receive(); !errors.Is(r.err, ErrClosed) || r.pInfo != nil {
		t.Fatalf("Pop after Close returned %v, %v", r.pInfo, r.err)
	}
	if _, err := q.Pop(logger); !errors.Is(err, ErrClosed) {
		t.Errorf("Pop on a closed queue: %v", err)
	}
}

func TestUpdate(t *testing.T) {
	withLabel := func(pod *v1.Pod) *v1.Pod {
		p := pod.DeepCopy()
		p.Labels = map[string]string{"changed": "yes"}
		return p
	}
	statusOnly := func(pod *v1.Pod) *v1.Pod {
		p := pod.DeepCopy()
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable"}}
		p.ResourceVersion = "7"
		p.Generation = 3
		return p
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, q *PriorityQueue, pod *v1.Pod)
		wait    time.Duration
		update  func(*v1.Pod) *v1.Pod
		want    string
		wantNew bool // the queue holds the new version
	}{
		{name: "in activeQ: in place", update: withLabel, want: QueueActive, wantNew: true},
		{name: "in backoffQ: in place", setup: func(t *testing.T, q *PriorityQueue, pod *v1.Pod) {
			popAndFail(t, q, klog.Background(), pod)
		}, update: withLabel, want: QueueBackoff, wantNew: true},
		{name: "unschedulable, status only: stays", setup: func(t *testing.T, q *PriorityQueue, pod *v1.Pod) {
			popAndFail(t, q, klog.Background(), pod, nodePlugin)
		}, wait: time.Minute, update: statusOnly, want: QueueUnschedulable, wantNew: true},
		{name: "unschedulable, spec changed, backing off: backoffQ", setup: func(t *testing.T, q *PriorityQueue, pod *v1.Pod) {
			popAndFail(t, q, klog.Background(), pod, nodePlugin)
		}, update: withLabel, want: QueueBackoff, wantNew: true},
		{name: "unschedulable, spec changed, back-off over: activeQ", setup: func(t *testing.T, q *PriorityQueue, pod *v1.Pod) {
			popAndFail(t, q, klog.Background(), pod, nodePlugin)
		}, wait: time.Minute, update: withLabel, want: QueueActive, wantNew: true},
		{name: "unknown pod: added", setup: func(t *testing.T, q *PriorityQueue, pod *v1.Pod) {
			q.Delete(pod)
		}, update: withLabel, want: QueueActive, wantNew: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, fc, logger := newTestQueue(t, hintsFor(QueueingHintMap{nodeAdd: {{PluginName: nodePlugin}}}))
			pod := st.MakePod().Name("p").Obj()
			q.Add(logger, pod)
			if tt.setup != nil {
				tt.setup(t, q, pod)
			}
			fc.Step(tt.wait)
			newPod := tt.update(pod)
			q.Update(logger, pod, newPod)
			if got := where(q, pod); got != tt.want {
				t.Fatalf("pod in %q, want %q", got, tt.want)
			}
			q.lock.Lock()
			held := q.lookup(pod.UID)
			q.lock.Unlock()
			if (held.Pod == newPod) != tt.wantNew {
				t.Errorf("queue holds the new version: %v, want %v", held.Pod == newPod, tt.wantNew)
			}
		})
	}
}

func TestUpdateReordersActiveQ(t *testing.T) {
	q, _, logger := newTestQueue(t)
	a, b := st.MakePod().Name("a").Priority(10).Obj(), st.MakePod().Name("b").Priority(1).Obj()
	q.Add(logger, a)
	q.Add(logger, b)
	bHigh := b.DeepCopy()
	bHigh.Spec.Priority = new(int32)
	*bHigh.Spec.Priority = 100
	q.Update(logger, b, bHigh)
	mustPop(t, q, logger, b)
	mustPop(t, q, logger, a)
}

func TestActivate(t *testing.T) {
	q, _, logger := newTestQueue(t)
	u, b, a := st.MakePod().Name("u").Priority(3).Obj(), st.MakePod().Name("b").Priority(2).Obj(), st.MakePod().Name("a").Priority(1).Obj()
	for _, pod := range []*v1.Pod{u, b, a} {
		q.Add(logger, pod)
	}
	popAndFail(t, q, logger, u, nodePlugin)
	popAndFail(t, q, logger, b)
	q.Activate(logger, map[string]*v1.Pod{"u": u, "b": b, "unknown": st.MakePod().Name("unknown").Obj()})
	for _, pod := range []*v1.Pod{u, b, a} {
		if got := where(q, pod); got != QueueActive {
			t.Errorf("%s in %q, want active", pod.Name, got)
		}
	}
	if pods, _ := q.PendingPods(); len(pods) != 3 {
		t.Errorf("%d pending pods, want 3", len(pods))
	}
}

func TestAssignedPodAdded(t *testing.T) {
	hints := hintsFor(QueueingHintMap{
		{Resource: framework.Pod, ActionType: framework.Add | framework.UpdatePodLabel}: {
			{PluginName: interPodAffinityName}, {PluginName: podTopologySpreadName}, {PluginName: otherPlugin},
		},
	})
	tests := []struct {
		name     string
		pod      *v1.Pod
		rejected string
		bound    *v1.Pod
		want     string
	}{
		{name: "affinity term matches the bound pod",
			pod:      st.MakePod().Name("p").PodAffinity("zone", "app", "web").Obj(),
			rejected: interPodAffinityName, bound: st.MakePod().Name("w").Label("app", "web").Node("n").Obj(),
			want: QueueActive},
		{name: "affinity term does not match",
			pod:      st.MakePod().Name("p").PodAffinity("zone", "app", "web").Obj(),
			rejected: interPodAffinityName, bound: st.MakePod().Name("w").Label("app", "db").Node("n").Obj(),
			want: QueueUnschedulable},
		{name: "affinity term of another namespace",
			pod:      st.MakePod().Name("p").PodAffinity("zone", "app", "web").Obj(),
			rejected: interPodAffinityName, bound: st.MakePod().Name("w").Namespace("other").Label("app", "web").Node("n").Obj(),
			want: QueueUnschedulable},
		{name: "only anti-affinity: an added pod cannot help",
			pod:      st.MakePod().Name("p").PodAntiAffinity("zone", "app", "web").Obj(),
			rejected: interPodAffinityName, bound: st.MakePod().Name("w").Label("app", "web").Node("n").Obj(),
			want: QueueUnschedulable},
		{name: "topology spread, same namespace",
			pod:      st.MakePod().Name("p").Obj(),
			rejected: podTopologySpreadName, bound: st.MakePod().Name("w").Node("n").Obj(),
			want: QueueActive},
		{name: "topology spread, other namespace",
			pod:      st.MakePod().Name("p").Obj(),
			rejected: podTopologySpreadName, bound: st.MakePod().Name("w").Namespace("other").Node("n").Obj(),
			want: QueueUnschedulable},
		{name: "another plugin that registered the event: left to its hint",
			pod:      st.MakePod().Name("p").Obj(),
			rejected: otherPlugin, bound: st.MakePod().Name("w").Node("n").Obj(),
			want: QueueActive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, fc, logger := newTestQueue(t, hints)
			q.Add(logger, tt.pod)
			popAndFail(t, q, logger, tt.pod, tt.rejected)
			fc.Step(time.Minute)
			q.AssignedPodAdded(logger, tt.bound)
			if got := where(q, tt.pod); got != tt.want {
				t.Errorf("pod in %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAssignedPodUpdated(t *testing.T) {
	hints := hintsFor(QueueingHintMap{
		{Resource: framework.Pod, ActionType: framework.UpdatePodLabel}: {{PluginName: interPodAffinityName}},
	})
	labelChange := framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.UpdatePodLabel}
	tests := []struct {
		name          string
		pod           *v1.Pod
		before, after map[string]string
		want          string
	}{
		{name: "now matches an affinity term", pod: st.MakePod().Name("p").PodAffinity("zone", "app", "web").Obj(),
			before: map[string]string{"app": "db"}, after: map[string]string{"app": "web"}, want: QueueActive},
		{name: "no longer matches an anti-affinity term", pod: st.MakePod().Name("p").PodAntiAffinity("zone", "app", "web").Obj(),
			before: map[string]string{"app": "web"}, after: map[string]string{"app": "db"}, want: QueueActive},
		{name: "matches neither", pod: st.MakePod().Name("p").PodAffinity("zone", "app", "web").Obj(),
			before: map[string]string{"app": "db"}, after: map[string]string{"app": "cache"}, want: QueueUnschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, fc, logger := newTestQueue(t, hints)
			q.Add(logger, tt.pod)
			popAndFail(t, q, logger, tt.pod, interPodAffinityName)
			fc.Step(time.Minute)
			oldPod := st.MakePod().Name("w").Labels(tt.before).Node("n").Obj()
			newPod := st.MakePod().Name("w").Labels(tt.after).Node("n").Obj()
			q.AssignedPodUpdated(logger, oldPod, newPod, labelChange)
			if got := where(q, tt.pod); got != tt.want {
				t.Errorf("pod in %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAssignedPodAddedDropsItsNomination(t *testing.T) {
	q, _, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").NominatedNode("n1").Obj()
	q.Add(logger, pod)
	mustPop(t, q, logger, pod)
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "n1"
	q.AssignedPodAdded(logger, bound)
	if got := q.NominatedPodsForNode("n1"); len(got) != 0 {
		t.Errorf("bound pod still nominated")
	}
}

// TestRun drives the flush goroutines with the fake clock: Pop returns only once the
// backoffQ flush has moved the pod.
func TestRun(t *testing.T) {
	q, fc, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	popAndFail(t, q, logger, pod)
	q.Run(logger)
	fc.Step(time.Second)
	pInfo, err := q.Pop(logger)
	if err != nil || pInfo.Pod.UID != pod.UID {
		t.Fatalf("Pop: %v, %v", pInfo, err)
	}
	// The leftover flush runs every 30 s: a pod that failed over 5 min ago goes back to activeQ.
	fail(t, q, logger, pInfo, nodePlugin)
	fc.Step(DefaultPodMaxInUnschedulablePodsDuration + 30*time.Second)
	if pInfo, err := q.Pop(logger); err != nil || pInfo.Pod.UID != pod.UID {
		t.Fatalf("Pop: %v, %v", pInfo, err)
	}
}

func TestMetrics(t *testing.T) {
	rec := newFakeRecorder()
	q, fc, logger := newTestQueue(t, WithMetricsRecorder(rec),
		WithPreEnqueuePluginMap(map[string][]framework.PreEnqueuePlugin{v1.DefaultSchedulerName: {gatePlugin{}}}))
	a, b, c, g := st.MakePod().Name("a").Priority(3).Obj(), st.MakePod().Name("b").Priority(2).Obj(),
		st.MakePod().Name("c").Priority(1).Obj(), st.MakePod().Name("g").SchedulingGates("x").Obj()
	for _, pod := range []*v1.Pod{a, b, c, g} {
		q.Add(logger, pod)
	}
	popAndFail(t, q, logger, a, nodePlugin)
	popAndFail(t, q, logger, b)
	if got := fmt.Sprint(rec.pendingCounts()); got != "map[active:1 backoff:1 gated:1 unschedulable:1]" {
		t.Errorf("pending %s", got)
	}
	fc.Step(time.Minute)
	q.flushBackoffQCompleted(logger)
	if got := fmt.Sprint(rec.pendingCounts()); got != "map[active:2 gated:1 unschedulable:1]" {
		t.Errorf("pending %s", got)
	}
	want := map[[2]string]int{
		{QueueActive, "UnscheduledPodAdd"}:           3,
		{QueueUnschedulable, "UnscheduledPodAdd"}:    1,
		{QueueUnschedulable, ScheduleAttemptFailure}: 1,
		{QueueBackoff, ScheduleAttemptFailure}:       1,
		{QueueActive, BackoffComplete}:               1,
	}
	if fmt.Sprint(rec.incoming) != fmt.Sprint(want) {
		t.Errorf("incoming %v, want %v", rec.incoming, want)
	}
}

func TestAddTwiceIsAnUpdate(t *testing.T) {
	q, _, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").Obj()
	q.Add(logger, pod)
	newPod := pod.DeepCopy()
	newPod.Labels = map[string]string{"a": "b"}
	q.Add(logger, newPod)
	if pods, _ := q.PendingPods(); len(pods) != 1 || pods[0] != newPod {
		t.Errorf("pending %v", pods)
	}
}
