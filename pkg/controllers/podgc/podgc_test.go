package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pod builds a test pod created at minute created.
type podBuilder struct{ *corev1.Pod }

func newPod(name string, created int) podBuilder {
	return podBuilder{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 2,
		CreationTimestamp: metav1.NewTime(start.Add(time.Duration(created) * time.Minute)),
	}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
}

func (p podBuilder) phase(phase corev1.PodPhase, reason string) podBuilder {
	p.Status.Phase, p.Status.Reason = phase, reason
	return p
}

func (p podBuilder) on(node string) podBuilder { p.Spec.NodeName = node; return p }

func (p podBuilder) terminating() podBuilder {
	p.DeletionTimestamp = &metav1.Time{Time: start}
	return p
}

func readyNode(name string, ready bool, taints ...corev1.Taint) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}

// fixture is a controller whose informers' caches hold what the test gives (the fake client
// holds the same), on a fake clock.
type fixture struct {
	ctx    context.Context
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	gcc    *PodGCController
}

func newFixture(t *testing.T, threshold int, pods []podBuilder, nodes ...*corev1.Node) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p.Pod)
	}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer, nodeInformer := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	for _, p := range pods {
		_ = podInformer.Informer().GetIndexer().Add(p.Pod)
	}
	for _, n := range nodes {
		_ = nodeInformer.Informer().GetIndexer().Add(n)
	}
	clk := clocktesting.NewFakeClock(start)
	gcc := newPodGC(client, podInformer, nodeInformer, threshold, clk)
	t.Cleanup(gcc.nodeQueue.ShutDown)
	ctx := klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig()))
	return &fixture{ctx: ctx, client: client, clock: clk, gcc: gcc}
}

// writes are the client's pod writes: "delete NAME" and "patch-status NAME".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a := a.(type) {
		case clienttesting.DeleteActionImpl:
			out = append(out, fmt.Sprintf("delete %s grace=%d uid=%s", a.Name, *a.DeleteOptions.GracePeriodSeconds, *a.DeleteOptions.Preconditions.UID))
		case clienttesting.PatchActionImpl:
			out = append(out, "patch-"+a.Subresource+" "+a.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestTerminatedPodsOverTheThresholdAreDeletedEvictedAndOldestFirst(t *testing.T) {
	f := newFixture(t, 2, []podBuilder{
		newPod("new-succeeded", 5).phase(corev1.PodSucceeded, ""),
		newPod("old-failed", 1).phase(corev1.PodFailed, ""),
		newPod("newest-evicted", 9).phase(corev1.PodFailed, "Evicted"),
		newPod("mid-succeeded", 3).phase(corev1.PodSucceeded, ""),
		newPod("running", 0),
	})
	f.gcc.gc(f.ctx)
	want := []string{"delete newest-evicted grace=0 uid=uid-newest-evicted", "delete old-failed grace=0 uid=uid-old-failed"}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
}

func TestThresholdZeroKeepsTerminatedPods(t *testing.T) {
	f := newFixture(t, 0, []podBuilder{newPod("done", 1).phase(corev1.PodSucceeded, "")})
	f.gcc.gc(f.ctx)
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes = %q, want none", got)
	}
}

func TestOrphanedPodsAreDeletedAfterTheQuarantine(t *testing.T) {
	f := newFixture(t, 10, []podBuilder{
		newPod("orphan", 1).on("gone"),
		newPod("back", 1).on("returning"),
		newPod("fine", 1).on("here"),
	}, readyNode("here", true))
	// "returning" is missing from the informer but the API server has it.
	if _, err := f.client.CoreV1().Nodes().Create(f.ctx, readyNode("returning", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions()

	f.gcc.gc(f.ctx)
	if got := f.writes(); len(got) != 0 {
		t.Fatalf("writes during the quarantine = %q, want none", got)
	}
	f.clock.Step(quarantineTime + time.Second)
	if err := wait.PollUntilContextTimeout(f.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return f.gcc.nodeQueue.Len() == 2, nil
	}); err != nil {
		t.Fatalf("the quarantined nodes did not come out of the queue: %v", err)
	}
	f.gcc.gc(f.ctx)
	want := []string{"delete orphan grace=0 uid=uid-orphan", "patch-status orphan"}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Fatalf("writes = %q, want %q", got, want)
	}
	// The status patch marks the orphan Failed with the DisruptionTarget condition.
	var patch corev1.Pod
	for _, a := range f.client.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok {
			if err := json.Unmarshal(p.Patch, &patch); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantCondition := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, ObservedGeneration: 2,
		Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists", LastTransitionTime: metav1.NewTime(f.clock.Now())}
	if patch.Status.Phase != corev1.PodFailed || patch.UID != "uid-orphan" || patch.Status.ObservedGeneration != 2 ||
		len(patch.Status.Conditions) != 1 || !patch.Status.Conditions[0].LastTransitionTime.Equal(&wantCondition.LastTransitionTime) {
		t.Errorf("status patch = %+v, want phase Failed, the pod's UID, observedGeneration 2 and %+v", patch.Status, wantCondition)
	}
	got := patch.Status.Conditions[0]
	got.LastTransitionTime = wantCondition.LastTransitionTime
	if got != wantCondition {
		t.Errorf("condition = %+v, want %+v", got, wantCondition)
	}
}

func TestTerminatingPods(t *testing.T) {
	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
	f := newFixture(t, 10, []podBuilder{
		newPod("unscheduled", 1).terminating(),
		newPod("on-dead-node", 1).on("dead").terminating().phase(corev1.PodSucceeded, ""),
		newPod("on-tainted-ready-node", 1).on("tainted-ready").terminating(),
		newPod("on-not-ready-node", 1).on("not-ready").terminating(),
		newPod("running-on-dead-node", 1).on("dead"),
	}, readyNode("dead", false, outOfService), readyNode("tainted-ready", true, outOfService), readyNode("not-ready", false))
	f.gcc.gc(f.ctx)
	// A terminated pod is deleted without a status patch; the unscheduled one is patched
	// Failed first. Pods on nodes only not ready, or only tainted, stay.
	want := []string{
		"delete on-dead-node grace=0 uid=uid-on-dead-node",
		"delete unscheduled grace=0 uid=uid-unscheduled",
		"patch-status unscheduled",
	}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
}

func TestFailedStatusKeepsTheTransitionTimeOfAnUnchangedCondition(t *testing.T) {
	then := metav1.NewTime(start.Add(-time.Hour))
	pod := newPod("p", 0).Pod
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: then}}
	status := failedStatus(pod, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC"}, metav1.NewTime(start))
	if len(status.Conditions) != 1 || !status.Conditions[0].LastTransitionTime.Equal(&then) || status.Conditions[0].Reason != "DeletionByPodGC" {
		t.Errorf("conditions = %+v, want the one condition updated with its old transition time", status.Conditions)
	}
	if pod.Status.Conditions[0].Reason != "" {
		t.Error("failedStatus changed the cached pod")
	}
}

func TestRunStopsWithItsContext(t *testing.T) {
	f := newFixture(t, 1, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- f.gcc.Run(ctx, 1) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run() = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
