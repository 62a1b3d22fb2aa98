package allocation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

// makePod is a pod of one container "c" requesting cpu (millicores), at generation 1.
func makePod(name string, milliCPU int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)},
		}}}},
	}
}

// resized is pod at a new cpu request, one generation on.
func resized(pod *v1.Pod, milliCPU int64) *v1.Pod {
	p := pod.DeepCopy()
	p.Generation++
	p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)
	return p
}

// fixture is a node of 1000m cpu whose pods are the map's; admission counts cpu requests.
type fixture struct {
	m        *Manager
	pods     map[types.UID]*v1.Pod
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
}

func newFixture(t *testing.T, store *Store) *fixture {
	f := &fixture{pods: map[types.UID]*v1.Pod{}, recorder: record.NewFakeRecorder(100), clock: testingclock.NewFakeClock(time.Unix(1000, 0))}
	f.m = NewManager(Config{
		Allocated: store,
		Admit: func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
			used := int64(0)
			for _, o := range others {
				used += o.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
			}
			req := pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
			if used+req > 1000 {
				return false, "OutOfcpu", fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: 1000", req, used)
			}
			return true, "", ""
		},
		GetPodByUID: func(uid types.UID) (*v1.Pod, bool) { p, ok := f.pods[uid]; return p, ok },
		ActivePods: func() []*v1.Pod {
			var out []*v1.Pod
			for _, p := range f.pods {
				out = append(out, p)
			}
			return out
		},
		Recorder: f.recorder,
		Clock:    f.clock,
	})
	return f
}

func (f *fixture) add(t *testing.T, pod *v1.Pod) {
	t.Helper()
	var active []*v1.Pod
	for _, p := range f.pods {
		active = append(active, p)
	}
	if ok, reason, msg := f.m.AddPod(klog.Background(), pod, active); !ok {
		t.Fatalf("AddPod(%s): %s %s", pod.Name, reason, msg)
	}
	f.pods[pod.UID] = pod
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func cpuOf(pod *v1.Pod) int64 { return pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() }

func TestResizeAcceptedDeferredAndRetried(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, mustStore(t, ""))
	a, b := makePod("a", 300), makePod("b", 500)
	f.add(t, a)
	f.add(t, b)

	// a grows to 400: it fits (400 + 500), is allocated and in progress.
	a2 := resized(a, 400)
	f.pods[a.UID] = a2
	f.m.HandlePodUpdate(ctx, a2)
	if got, _ := f.m.UpdatePodFromAllocation(a2); cpuOf(got) != 400 {
		t.Errorf("allocated cpu of a = %dm, want 400m", cpuOf(got))
	}
	conds := f.m.ResizeConditions(a.UID)
	if len(conds) != 1 || conds[0].Type != v1.PodResizeInProgress || conds[0].ObservedGeneration != 2 || conds[0].Reason != "" {
		t.Errorf("conditions after an accepted resize: %+v", conds)
	}
	if ev := f.events(); len(ev) != 1 || ev[0] != `Normal ResizeStarted Pod resize started: {"containers":[{"name":"c","resources":{"requests":{"cpu":"400m"}}}],"generation":2}` {
		t.Errorf("events: %q", ev)
	}

	// b grows to 700: 400 + 700 > 1000, deferred; the pod keeps its allocation.
	b2 := resized(b, 700)
	f.pods[b.UID] = b2
	f.m.HandlePodUpdate(ctx, b2)
	if got, resized := f.m.UpdatePodFromAllocation(b2); !resized || cpuOf(got) != 500 {
		t.Errorf("deferred: allocated %dm (resized %t), want 500m", cpuOf(got), resized)
	}
	conds = f.m.ResizeConditions(b.UID)
	wantMsg := "Node didn't have enough resource: cpu, requested: 700, used: 400, capacity: 1000"
	if len(conds) != 1 || conds[0].Type != v1.PodResizePending || conds[0].Reason != v1.PodReasonDeferred ||
		conds[0].Message != wantMsg || conds[0].ObservedGeneration != 2 || conds[0].Status != v1.ConditionTrue {
		t.Errorf("conditions after a deferred resize: %+v", conds)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ResizeDeferred Pod resize Deferred: ") ||
		!strings.HasSuffix(ev[0], `"generation":2,"error":"`+wantMsg+`"}`) {
		t.Errorf("events: %q", ev)
	}
	// Retrying changes nothing while it does not fit, and syncs nothing.
	if synced := f.m.RetryPendingResizes(ctx); len(synced) != 0 {
		t.Errorf("a retry that changed nothing synced %d pods", len(synced))
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("a retry repeated the events: %q", ev)
	}

	// a leaves: b's resize fits now.
	delete(f.pods, a.UID)
	f.m.RemovePod(klog.Background(), a.UID)
	synced := f.m.RetryPendingResizes(ctx)
	if len(synced) != 1 || synced[0].UID != b.UID {
		t.Fatalf("retry synced %v, want b", synced)
	}
	if got, resized := f.m.UpdatePodFromAllocation(b2); resized || cpuOf(got) != 700 {
		t.Errorf("after the retry b is allocated %dm", cpuOf(got))
	}
	conds = f.m.ResizeConditions(b.UID)
	if len(conds) != 1 || conds[0].Type != v1.PodResizeInProgress {
		t.Errorf("conditions after the retry: %+v", conds)
	}
	if gen, ok := f.m.ClearResizeInProgress(b.UID); !ok || gen != 2 {
		t.Errorf("ClearResizeInProgress = %d, %t", gen, ok)
	}
	if conds := f.m.ResizeConditions(b.UID); len(conds) != 0 {
		t.Errorf("conditions after completion: %+v", conds)
	}
}

func TestResizeRevertedClearsPending(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, mustStore(t, ""))
	a := makePod("a", 600)
	f.add(t, a)
	a2 := resized(a, 1200)
	f.pods[a.UID] = a2
	f.m.HandlePodUpdate(ctx, a2)
	if c := f.m.ResizeConditions(a.UID); len(c) != 1 || c[0].Type != v1.PodResizePending {
		t.Fatalf("conditions: %+v", c)
	}
	a3 := resized(a2, 600)
	f.pods[a.UID] = a3
	f.m.HandlePodUpdate(ctx, a3)
	if c := f.m.ResizeConditions(a.UID); len(c) != 0 {
		t.Errorf("a resize reverted to the allocation is still pending: %+v", c)
	}
}

func TestInProgressKeepsItsGeneration(t *testing.T) {
	f := newFixture(t, mustStore(t, ""))
	uid := types.UID("u")
	if gen, changed := f.m.SetResizeInProgress(uid, "", "", 2); gen != 2 || !changed {
		t.Errorf("first set: %d %t", gen, changed)
	}
	if gen, changed := f.m.SetResizeInProgress(uid, "", "", 3); gen != 2 || changed {
		t.Errorf("set again: %d %t, want the old generation and no change", gen, changed)
	}
	if gen, changed := f.m.SetResizeInProgress(uid, v1.PodReasonError, "boom", 3); gen != 2 || !changed {
		t.Errorf("error: %d %t", gen, changed)
	}
	if gen, changed := f.m.SetResizeInProgress(uid, "", "", 3); gen != 2 || changed {
		t.Errorf("the error stays: %d %t", gen, changed)
	}
	c := f.m.ResizeConditions(uid)
	if len(c) != 1 || c[0].Reason != v1.PodReasonError || c[0].Message != "boom" {
		t.Errorf("conditions: %+v", c)
	}
}

// A restarted node agent admits a pod at the size it allocated, not at its spec's, and
// carries on with the pending resize and its condition.
func TestAllocationSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), AllocatedStateFile)
	f := newFixture(t, mustStore(t, path))
	a, b := makePod("a", 500), makePod("b", 400)
	f.add(t, a)
	f.add(t, b)
	b2 := resized(b, 700)
	f.pods[b.UID] = b2
	f.m.HandlePodUpdate(ctx, b2)

	g := newFixture(t, mustStore(t, path))
	b2.Status.Conditions = f.m.ResizeConditions(b.UID)
	g.add(t, a)
	g.add(t, b2)
	if got, resized := g.m.UpdatePodFromAllocation(b2); !resized || cpuOf(got) != 400 {
		t.Errorf("after a restart b is allocated %dm (resized %t), want 400m", cpuOf(got), resized)
	}
	if c := g.m.ResizeConditions(b.UID); len(c) != 1 || c[0].Reason != v1.PodReasonDeferred {
		t.Errorf("conditions after a restart: %+v", c)
	}
	g.pods[b.UID] = b2
	g.m.RetryPendingResizes(ctx) // still 500 + 700 > 1000
	delete(g.pods, a.UID)
	g.m.RemovePod(klog.Background(), a.UID)
	if synced := g.m.RetryPendingResizes(ctx); len(synced) != 1 {
		t.Errorf("the pending resize of before the restart was not retried: %v", synced)
	}
}

func TestStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	s := mustStore(t, path)
	r := v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("50Mi")}}
	if err := s.SetContainer("u1", "c", r); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPod("u2", ContainerResources{"d": r}); err != nil {
		t.Fatal(err)
	}
	s2 := mustStore(t, path)
	if got, ok := s2.Container("u1", "c"); !ok || !got.Limits.Memory().Equal(resource.MustParse("50Mi")) {
		t.Errorf("reloaded: %v %t", got, ok)
	}
	if err := s2.RemoveOrphans(func(uid types.UID) bool { return uid == "u2" }); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustStore(t, path).Pod("u1"); ok {
		t.Error("an orphan survived RemoveOrphans")
	}
	if _, ok := mustStore(t, path).Pod("u2"); !ok {
		t.Error("RemoveOrphans removed a pod it was told to keep")
	}
	os.WriteFile(path, []byte("{not json"), 0o600)
	if s, err := NewStore(path); err == nil || s == nil {
		t.Errorf("a corrupt file: %v, %v", s, err)
	} else if _, ok := s.Pod("u2"); ok {
		t.Error("a corrupt file gave pods")
	}
}

func mustStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := NewStore(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestResizeMessages(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "c0", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}, Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}},
		Containers: []v1.Container{{Name: "c1", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("200")}, Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("100")}}},
			{Name: "c2"}},
	}}
	want := `Pod resize completed: {"initContainers":[{"name":"c0","resources":{"limits":{"cpu":"200m"},"requests":{"cpu":"100m"}}}],"containers":[{"name":"c1","resources":{"limits":{"memory":"200"},"requests":{"memory":"100"}}},{"name":"c2","resources":{}}],"generation":2}`
	if got := ResizeCompletedMessage(klog.Background(), pod, 2); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := ResizeErrorMessage(klog.Background(), &v1.Pod{}, 3, "boom"); got != `Pod resize error: {"generation":3,"error":"boom"}` {
		t.Errorf("error message: %s", got)
	}
}

// Run retries on TriggerRetry and on its ticker, and syncs the pods whose resize moved.
func TestRunRetries(t *testing.T) {
	f := newFixture(t, mustStore(t, ""))
	a, b := makePod("a", 600), makePod("b", 300)
	f.add(t, a)
	f.add(t, b)
	b2 := resized(b, 600)
	f.pods[b.UID] = b2
	f.m.HandlePodUpdate(context.Background(), b2) // deferred: 600 + 600 > 1000
	synced := make(chan types.UID, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.m.Run(ctx, func(p *v1.Pod) { synced <- p.UID }) }()
	defer func() { cancel(); <-done }()

	delete(f.pods, a.UID)
	f.m.RemovePod(klog.Background(), a.UID)
	f.m.TriggerRetry()
	select {
	case uid := <-synced:
		if uid != b.UID {
			t.Fatalf("synced %s", uid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("TriggerRetry did not retry the pending resize")
	}

	// Deferred again; the room comes free without a trigger: the ticker retries it.
	c := makePod("c", 300)
	f.add(t, c)
	b3 := resized(b2, 900)
	f.pods[b.UID] = b3
	f.m.HandlePodUpdate(context.Background(), b3) // 900 + 300 > 1000
	if !f.m.isPending(b.UID, v1.PodReasonDeferred) {
		t.Fatal("not deferred")
	}
	delete(f.pods, c.UID)
	for deadline := time.Now().Add(10 * time.Second); !f.clock.HasWaiters() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	f.clock.Step(initialRetryDelay)
	select {
	case uid := <-synced:
		if uid != b.UID {
			t.Fatalf("synced %s", uid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ticker did not retry the pending resize")
	}
}

// The store rewrites its whole file on each change, so a container restarted with the same
// resources (a crash loop) must not write it again; a changed record must.
func TestStoreSkipsUnchangedWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	s := mustStore(t, path)
	r := v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("50Mi")}}
	if err := s.SetContainer("u1", "c", r); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPod("u2", ContainerResources{"d": r}); err != nil {
		t.Fatal(err)
	}
	// A file removed behind the store's back shows whether the next call writes.
	os.Remove(path)
	same := v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("52428800")}}
	if err := s.SetContainer("u1", "c", same); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPod("u2", ContainerResources{"d": same}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("an unchanged record was written again: %v", err)
	}
	if err := s.SetContainer("u1", "c", v1.ResourceRequirements{}); err != nil {
		t.Fatal(err)
	}
	if got, ok := mustStore(t, path).Container("u1", "c"); !ok || got.Limits != nil {
		t.Errorf("a changed record was not written: %v %t", got, ok)
	}
	if err := s.SetPod("u3", ContainerResources{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustStore(t, path).Pod("u3"); !ok {
		t.Error("a new pod's empty record was not written")
	}
}
