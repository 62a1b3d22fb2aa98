package status

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/podstatus"
	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakePodManager is the node agent's pods: by UID, with mirror pods by full name.
type fakePodManager struct {
	mu      sync.Mutex
	pods    map[types.UID]*v1.Pod
	mirrors map[string]*v1.Pod
}

func newFakePodManager() *fakePodManager {
	return &fakePodManager{pods: map[types.UID]*v1.Pod{}, mirrors: map[string]*v1.Pod{}}
}

func (f *fakePodManager) add(pod *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if nodetypes.IsMirrorPod(pod) {
		f.mirrors[nodetypes.GetPodFullName(pod)] = pod
		return
	}
	f.pods[pod.UID] = pod
}

func (f *fakePodManager) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[uid]
	return p, ok
}

func (f *fakePodManager) GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.mirrors[nodetypes.GetPodFullName(pod)]
	return p, ok
}

func (f *fakePodManager) TranslatePodUID(uid types.UID) types.UID {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, m := range f.mirrors {
		if m.UID != uid {
			continue
		}
		for _, p := range f.pods {
			if nodetypes.GetPodFullName(p) == name {
				return p.UID
			}
		}
	}
	return uid
}

type fakeSafety struct{ running bool }

func (f *fakeSafety) PodCouldHaveRunningContainers(*v1.Pod) bool { return f.running }

type env struct {
	client *fake.Clientset
	pm     *fakePodManager
	safety *fakeSafety
	clk    *testingclock.FakeClock
	m      *manager
	ctx    context.Context
	logger klog.Logger
}

func newEnv(t *testing.T, apiPods ...*v1.Pod) *env {
	var objs []runtime.Object
	for _, p := range apiPods {
		objs = append(objs, p.DeepCopy())
	}
	e := &env{
		client: fake.NewClientset(objs...),
		pm:     newFakePodManager(),
		safety: &fakeSafety{},
		clk:    testingclock.NewFakeClock(t0),
	}
	for _, p := range apiPods {
		e.pm.add(p.DeepCopy())
	}
	e.logger, e.ctx = ktesting.NewTestContext(t)
	e.m = NewManager(e.client, e.pm, e.safety, WithClock(e.clk)).(*manager)
	return e
}

// sync runs one batch and returns the writes it made (patches and deletes).
func (e *env) sync(all bool) (patches []map[string]any, deletes []core.DeleteActionImpl) {
	e.client.ClearActions()
	e.m.syncBatch(e.ctx, all)
	for _, a := range e.client.Actions() {
		switch a := a.(type) {
		case core.PatchActionImpl:
			var p map[string]any
			if err := json.Unmarshal(a.GetPatch(), &p); err != nil {
				panic(err)
			}
			if a.GetSubresource() != "status" || a.GetPatchType() != types.StrategicMergePatchType {
				panic("not a strategic merge patch of pods/status")
			}
			patches = append(patches, p)
		case core.DeleteActionImpl:
			deletes = append(deletes, a)
		case core.GetActionImpl:
		default:
			panic("unexpected action " + a.GetVerb())
		}
	}
	return patches, deletes
}

func (e *env) apiPod(t *testing.T, name string) *v1.Pod {
	t.Helper()
	p, err := e.client.CoreV1().Pods("ns").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return p
}

func makePod(name string, containers ...string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Generation: 1},
		Spec:       v1.PodSpec{NodeName: "node", RestartPolicy: v1.RestartPolicyAlways},
		Status: v1.PodStatus{
			Phase:    v1.PodPending,
			QOSClass: v1.PodQOSBestEffort,
			Conditions: []v1.PodCondition{{
				// As the scheduler sets it.
				Type: v1.PodScheduled, Status: v1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
			}},
		},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c, Image: "img-" + c})
	}
	return pod
}

func runningStatus(name string) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name: name, Image: "img-" + name, ImageID: "sha256:" + name, ContainerID: "containerd://" + name,
		Ready: true, Started: ptr.To(true),
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
	}
}

// runningPodStatus is what the generator makes of pod with every container running.
func runningPodStatus(pod *v1.Pod) v1.PodStatus {
	s := v1.PodStatus{
		Phase: v1.PodRunning, QOSClass: v1.PodQOSBestEffort, HostIP: "192.0.2.10", HostIPs: []v1.HostIP{{IP: "192.0.2.10"}},
		PodIP: "10.88.0.5", PodIPs: []v1.PodIP{{IP: "10.88.0.5"}}, StartTime: ptr.To(metav1.NewTime(t0)),
	}
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, runningStatus(c.Name))
	}
	for _, t := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		s.Conditions = append(s.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation})
	}
	return s
}

func keys(m map[string]any) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestWritesOnlyWhatChanged(t *testing.T) {
	pod := makePod("p", "a")
	e := newEnv(t, pod)

	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	patches, _ := e.sync(false)
	if len(patches) != 1 {
		t.Fatalf("want one patch, got %d", len(patches))
	}
	if got := keys(patches[0]["metadata"].(map[string]any)); got != "uid" {
		t.Fatalf("metadata in the patch: %s", got)
	}
	// qosClass is unchanged; PodScheduled is unchanged and so not in the patch either.
	status := patches[0]["status"].(map[string]any)
	if got := keys(status); got != "$setElementOrder/conditions,conditions,containerStatuses,hostIP,hostIPs,observedGeneration,phase,podIP,podIPs,startTime" {
		t.Fatalf("patched fields: %s", got)
	}
	for _, c := range status["conditions"].([]any) {
		if c.(map[string]any)["type"] == string(v1.PodScheduled) {
			t.Fatalf("PodScheduled did not change but was patched: %v", c)
		}
	}
	api := e.apiPod(t, "p")
	if api.Status.Phase != v1.PodRunning || len(api.Status.Conditions) != 5 || api.Status.PodIP != "10.88.0.5" {
		t.Fatalf("API status = %+v", api.Status)
	}
	if c := findCondition(api.Status.Conditions, v1.PodScheduled); !c.LastTransitionTime.Time.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("PodScheduled's time moved: %v", c.LastTransitionTime)
	}

	// Nothing changed: no write, not even a request.
	if patches, _ := e.sync(false); len(patches) != 0 || len(e.client.Actions()) != 0 {
		t.Fatalf("a batch with nothing new made %d requests", len(e.client.Actions()))
	}
	// The same status again is no change.
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	if v := e.m.podStatuses[pod.UID].version; v != 1 {
		t.Fatalf("version = %d after the same status", v)
	}
	select {
	case <-e.m.changed:
	default:
		t.Fatalf("the first SetPodStatus should have signalled")
	}
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	select {
	case <-e.m.changed:
		t.Fatalf("the same status signalled a write")
	default:
	}
	// The periodic batch finds the API in agreement: a read at most, no write.
	e.pm.add(api)
	if patches, _ := e.sync(true); len(patches) != 0 || len(e.client.Actions()) != 0 {
		t.Fatalf("the periodic batch made %d requests for a pod in sync", len(e.client.Actions()))
	}

	// One container turns unready: only the container statuses and the two conditions change.
	next := runningPodStatus(pod)
	next.ContainerStatuses[0].Ready = false
	for i := range next.Conditions {
		if next.Conditions[i].Type == v1.PodReady || next.Conditions[i].Type == v1.ContainersReady {
			next.Conditions[i].Status = v1.ConditionFalse
			next.Conditions[i].Reason = podstatus.ContainersNotReady
		}
	}
	e.clk.Step(time.Minute)
	e.m.SetPodStatus(e.logger, pod, next)
	patches, _ = e.sync(false)
	if len(patches) != 1 {
		t.Fatalf("want one patch, got %d", len(patches))
	}
	if got := keys(patches[0]["status"].(map[string]any)); got != "$setElementOrder/conditions,conditions,containerStatuses" {
		t.Fatalf("patched fields: %s", got)
	}
	if n := len(patches[0]["status"].(map[string]any)["conditions"].([]any)); n != 2 {
		t.Fatalf("%d conditions patched, want 2", n)
	}
	api = e.apiPod(t, "p")
	if c := findCondition(api.Status.Conditions, v1.PodReady); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Ready = %+v", c)
	}
	if c := findCondition(api.Status.Conditions, v1.PodInitialized); !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("Initialized moved: %+v", c)
	}
}

func TestOthersConditionsArePreserved(t *testing.T) {
	pod := makePod("p", "a")
	pod.Status.Conditions = append(pod.Status.Conditions,
		v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue},
		v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "PreemptionByScheduler"},
	)
	e := newEnv(t, pod)
	// A rejected pod's status has no conditions at all.
	rejected := v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu", Message: "Pod was rejected: no cpu"}
	e.m.SetPodStatus(e.logger, pod, rejected)
	if patches, _ := e.sync(false); len(patches) != 1 {
		t.Fatalf("want one patch")
	}
	api := e.apiPod(t, "p")
	if api.Status.Phase != v1.PodFailed || api.Status.Reason != "OutOfcpu" {
		t.Fatalf("status = %+v", api.Status)
	}
	for _, ct := range []v1.PodConditionType{v1.PodScheduled, "example.com/gate", v1.DisruptionTarget} {
		if findCondition(api.Status.Conditions, ct) == nil {
			t.Fatalf("condition %s was dropped: %+v", ct, api.Status.Conditions)
		}
	}
}

// The resize conditions are the node agent's: written while it has them, at each new
// generation, and removed from the API's status once it has them no more.
func TestResizeConditionsFollowTheNodeAgent(t *testing.T) {
	pod := makePod("p", "a")
	e := newEnv(t, pod)
	st := runningPodStatus(pod)
	inProgress := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: 2}
	st.Conditions = append(st.Conditions, inProgress)
	e.m.SetPodStatus(e.logger, pod, st)
	e.sync(false)
	if c := findCondition(e.apiPod(t, "p").Status.Conditions, v1.PodResizeInProgress); c == nil || c.ObservedGeneration != 2 {
		t.Fatalf("PodResizeInProgress not written: %+v", c)
	}
	// Only the generation moves: still a change to write.
	st.Conditions[len(st.Conditions)-1].ObservedGeneration = 3
	e.m.SetPodStatus(e.logger, pod, st)
	e.sync(false)
	if c := findCondition(e.apiPod(t, "p").Status.Conditions, v1.PodResizeInProgress); c == nil || c.ObservedGeneration != 3 {
		t.Fatalf("the new generation was not written: %+v", c)
	}
	// The resize completed.
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	if patches, _ := e.sync(false); len(patches) != 1 {
		t.Fatalf("want one patch, got %d", len(patches))
	}
	if c := findCondition(e.apiPod(t, "p").Status.Conditions, v1.PodResizeInProgress); c != nil {
		t.Fatalf("PodResizeInProgress stayed in the API: %+v", c)
	}
}

func TestTerminalPhaseIsKept(t *testing.T) {
	pod := makePod("p", "a")
	pod.Status.Phase = v1.PodSucceeded
	e := newEnv(t, pod)
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	if s, _ := e.m.GetPodStatus(pod.UID); s.Phase != v1.PodSucceeded {
		t.Fatalf("stored phase = %s", s.Phase)
	}
	e.sync(false)
	if api := e.apiPod(t, "p"); api.Status.Phase != v1.PodSucceeded {
		t.Fatalf("API phase = %s", api.Status.Phase)
	}

	// The API pod turned terminal behind our back: the merge keeps it terminal.
	pod2 := makePod("q", "a")
	e = newEnv(t, pod2)
	e.m.SetPodStatus(e.logger, pod2, runningPodStatus(pod2))
	api := e.apiPod(t, "q")
	api.Status.Phase = v1.PodFailed
	if _, err := e.client.CoreV1().Pods("ns").UpdateStatus(e.ctx, api, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.sync(false)
	if api := e.apiPod(t, "q"); api.Status.Phase != v1.PodFailed {
		t.Fatalf("API phase = %s", api.Status.Phase)
	}
}

func TestNoTerminalPhaseWhileContainersCouldRun(t *testing.T) {
	pod := makePod("p", "a")
	e := newEnv(t, pod)
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	e.sync(false)
	e.pm.add(e.apiPod(t, "p"))

	e.safety.running = true
	done := runningPodStatus(pod)
	done.Phase = v1.PodSucceeded
	done.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	e.m.SetPodStatus(e.logger, pod, done)
	e.sync(false)
	api := e.apiPod(t, "p")
	if api.Status.Phase != v1.PodRunning || api.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("phase %s with containers %+v", api.Status.Phase, api.Status.ContainerStatuses)
	}
	e.pm.add(api)

	// The containers are gone: the periodic batch sees the drift and writes the phase.
	e.safety.running = false
	if patches, _ := e.sync(false); len(patches) != 0 {
		t.Fatalf("nothing new to write on a signal")
	}
	if patches, _ := e.sync(true); len(patches) != 1 {
		t.Fatalf("the periodic batch should write the terminal phase")
	}
	api = e.apiPod(t, "p")
	if api.Status.Phase != v1.PodSucceeded {
		t.Fatalf("phase = %s", api.Status.Phase)
	}
	for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		if c := findCondition(api.Status.Conditions, ct); c.Status != v1.ConditionFalse || c.Reason != podstatus.PodCompleted {
			t.Fatalf("%s = %+v", ct, c)
		}
	}
}

func TestDeletionAfterTermination(t *testing.T) {
	pod := makePod("p", "a", "b")
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	pod.DeletionGracePeriodSeconds = ptr.To[int64](30)
	e := newEnv(t, pod)
	st := runningPodStatus(pod)
	st.ContainerStatuses[1].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	e.m.SetPodStatus(e.logger, pod, st)

	// Containers may still run: the status is written, the pod is not deleted.
	e.safety.running = true
	if patches, deletes := e.sync(false); len(patches) != 1 || len(deletes) != 0 {
		t.Fatalf("patches %d deletes %d", len(patches), len(deletes))
	}

	e.safety.running = false
	e.m.TerminatePod(e.logger, pod)
	s, _ := e.m.GetPodStatus(pod.UID)
	a, b := s.ContainerStatuses[0].State.Terminated, s.ContainerStatuses[1].State.Terminated
	if s.Phase != v1.PodFailed || a == nil || a.ExitCode != 137 || a.Reason != podstatus.ContainerStatusUnknown ||
		a.Message != "The container could not be located when the pod was terminated" || b.Reason != "Completed" {
		t.Fatalf("terminated status = %+v", s)
	}
	patches, deletes := e.sync(false)
	if len(patches) != 1 || len(deletes) != 1 {
		t.Fatalf("patches %d deletes %d", len(patches), len(deletes))
	}
	opts := deletes[0].GetDeleteOptions()
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != pod.UID {
		t.Fatalf("delete options = %+v", opts)
	}
	if _, ok := e.m.GetPodStatus(pod.UID); ok {
		t.Fatalf("the status of a deleted pod is forgotten")
	}
	if _, err := e.client.CoreV1().Pods("ns").Get(e.ctx, "p", metav1.GetOptions{}); err == nil {
		t.Fatalf("the pod is still in the API")
	}
}

func TestDeletionRetriedByThePeriodicBatch(t *testing.T) {
	pod := makePod("p", "a")
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	e := newEnv(t, pod)
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	e.m.TerminatePod(e.logger, pod)
	e.client.PrependReactor("delete", "pods", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is down")
	})
	if _, deletes := e.sync(false); len(deletes) != 1 {
		t.Fatalf("want a delete")
	}
	api := e.apiPod(t, "p")
	e.pm.add(api)
	e.client.ReactionChain = e.client.ReactionChain[1:]
	patches, deletes := e.sync(true)
	if len(patches) != 0 || len(deletes) != 1 {
		t.Fatalf("the periodic batch retries the delete only: patches %d deletes %d", len(patches), len(deletes))
	}
}

func TestMirrorPodIsNotDeleted(t *testing.T) {
	static, mirror := staticAndMirror()
	mirror.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	mirror.Status.Phase = v1.PodFailed
	e := newEnv(t, mirror)
	e.pm.add(static)
	e.m.SetPodStatus(e.logger, static, runningPodStatus(static))
	if _, deletes := e.sync(false); len(deletes) != 0 {
		t.Fatalf("a mirror pod's deletion is not the status manager's")
	}
}

func staticAndMirror() (static, mirror *v1.Pod) {
	static = makePod("s", "a")
	static.UID = "static-uid"
	static.Annotations = map[string]string{nodetypes.ConfigSourceAnnotationKey: nodetypes.FileSource, nodetypes.ConfigHashAnnotationKey: "h"}
	mirror = makePod("s", "a")
	mirror.UID = "mirror-uid"
	mirror.Annotations = map[string]string{nodetypes.ConfigSourceAnnotationKey: nodetypes.ApiserverSource, nodetypes.ConfigMirrorAnnotationKey: "h"}
	return static, mirror
}

func TestStaticPodStatusGoesToItsMirror(t *testing.T) {
	static, mirror := staticAndMirror()
	e := newEnv(t)
	e.pm.add(static)
	e.m.SetPodStatus(e.logger, static, runningPodStatus(static))
	// No mirror pod yet: nothing to write to.
	if patches, _ := e.sync(false); len(patches) != 0 || len(e.client.Actions()) != 0 {
		t.Fatalf("a static pod without a mirror pod made requests")
	}

	if _, err := e.client.CoreV1().Pods("ns").Create(e.ctx, mirror, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.pm.add(mirror)
	if patches, _ := e.sync(false); len(patches) != 1 {
		t.Fatalf("want one patch")
	}
	if uid := patchUID(t, e); uid != "mirror-uid" {
		t.Fatalf("patched with uid %q", uid)
	}
	if api := e.apiPod(t, "s"); api.Status.Phase != v1.PodRunning {
		t.Fatalf("mirror status = %+v", api.Status)
	}
	if _, ok := e.m.apiStatusVersions["mirror-uid"]; !ok {
		t.Fatalf("written version is recorded by the mirror pod's UID")
	}
	if s, ok := e.m.GetPodStatus("mirror-uid"); !ok || s.Phase != v1.PodRunning {
		t.Fatalf("GetPodStatus by the mirror's UID = %v %v", s.Phase, ok)
	}
}

func patchUID(t *testing.T, e *env) string {
	for _, a := range e.client.Actions() {
		if p, ok := a.(core.PatchActionImpl); ok {
			var v struct {
				Metadata struct{ UID string } `json:"metadata"`
			}
			if err := json.Unmarshal(p.GetPatch(), &v); err != nil {
				t.Fatal(err)
			}
			return v.Metadata.UID
		}
	}
	t.Fatalf("no patch")
	return ""
}

func TestPeriodicResyncOfDrift(t *testing.T) {
	pod := makePod("p", "a")
	e := newEnv(t, pod)
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	e.sync(false)

	// Someone rewrites the status; the informer's copy shows it.
	api := e.apiPod(t, "p")
	api.Status.PodIP = "10.0.0.99"
	api.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.99"}}
	api, err := e.client.CoreV1().Pods("ns").UpdateStatus(e.ctx, api, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.pm.add(api)
	if patches, _ := e.sync(false); len(patches) != 0 {
		t.Fatalf("a signalled batch writes only what changed here")
	}
	patches, _ := e.sync(true)
	if len(patches) != 1 || keys(patches[0]["status"].(map[string]any)) != "$setElementOrder/podIPs,podIP,podIPs" {
		t.Fatalf("patches = %v", patches)
	}
	if api := e.apiPod(t, "p"); api.Status.PodIP != "10.88.0.5" {
		t.Fatalf("podIP = %s", api.Status.PodIP)
	}
}

func TestRecreatedPodDropsTheOldStatus(t *testing.T) {
	pod := makePod("p", "a")
	recreated := makePod("p", "a")
	recreated.UID = "new-uid"
	e := newEnv(t, recreated)
	e.pm.add(pod)
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	if patches, _ := e.sync(false); len(patches) != 0 {
		t.Fatalf("the new pod must not get the old pod's status")
	}
	if _, ok := e.m.GetPodStatus(pod.UID); ok {
		t.Fatalf("the old status is dropped")
	}
}

func TestRemoveOrphanedStatuses(t *testing.T) {
	a, b := makePod("a", "c"), makePod("b", "c")
	e := newEnv(t, a, b)
	e.m.SetPodStatus(e.logger, a, runningPodStatus(a))
	e.m.SetPodStatus(e.logger, b, runningPodStatus(b))
	e.m.RemoveOrphanedStatuses(e.logger, map[types.UID]bool{a.UID: true})
	if _, ok := e.m.GetPodStatus(a.UID); !ok {
		t.Fatalf("a was dropped")
	}
	if _, ok := e.m.GetPodStatus(b.UID); ok {
		t.Fatalf("b was kept")
	}
}

func TestTerminatePod(t *testing.T) {
	tests := []struct {
		name      string
		pod       func() *v1.Pod
		status    func(*v1.Pod) v1.PodStatus
		wantPhase v1.PodPhase
		wantApp   string // reason of the app container's terminated state, "" for not terminated
		wantInit  []string
	}{
		{
			name:      "running pod",
			pod:       func() *v1.Pod { return makePod("p", "a") },
			status:    runningPodStatus,
			wantPhase: v1.PodFailed, wantApp: podstatus.ContainerStatusUnknown,
		},
		{
			name: "succeeded pod keeps its phase",
			pod:  func() *v1.Pod { return makePod("p", "a") },
			status: func(p *v1.Pod) v1.PodStatus {
				s := runningPodStatus(p)
				s.Phase = v1.PodSucceeded
				s.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}
				return s
			},
			wantPhase: v1.PodSucceeded, wantApp: "Completed",
		},
		{
			name: "static pod keeps its phase",
			pod: func() *v1.Pod {
				s, _ := staticAndMirror()
				return s
			},
			status:    runningPodStatus,
			wantPhase: v1.PodRunning, wantApp: podstatus.ContainerStatusUnknown,
		},
		{
			name: "pod still initializing",
			pod: func() *v1.Pod {
				p := makePod("p", "a")
				p.Spec.InitContainers = []v1.Container{{Name: "i1"}, {Name: "i2"}}
				return p
			},
			status: func(p *v1.Pod) v1.PodStatus {
				s := runningPodStatus(p)
				s.Phase = v1.PodPending
				s.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}
				s.InitContainerStatuses = []v1.ContainerStatus{runningStatus("i1"), {Name: "i2", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}}
				return s
			},
			wantPhase: v1.PodFailed, wantInit: []string{podstatus.ContainerStatusUnknown, ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod()
			e := newEnv(t, pod)
			e.m.SetPodStatus(e.logger, pod, tt.status(pod))
			<-e.m.changed
			e.m.TerminatePod(e.logger, pod)
			select {
			case <-e.m.changed:
			default:
				t.Fatalf("TerminatePod queues a write")
			}
			s, _ := e.m.GetPodStatus(pod.UID)
			if s.Phase != tt.wantPhase {
				t.Fatalf("phase = %s", s.Phase)
			}
			app := ""
			if term := s.ContainerStatuses[0].State.Terminated; term != nil {
				app = term.Reason
			}
			if app != tt.wantApp {
				t.Fatalf("app container: %+v", s.ContainerStatuses[0].State)
			}
			for i, want := range tt.wantInit {
				got := ""
				if term := s.InitContainerStatuses[i].State.Terminated; term != nil {
					got = term.Reason
				}
				if got != want {
					t.Fatalf("init %d: %+v", i, s.InitContainerStatuses[i].State)
				}
			}
		})
	}
}

func TestContainerReadinessAndStartup(t *testing.T) {
	pod := makePod("p", "a", "b")
	e := newEnv(t, pod)
	e.m.SetContainerReadiness(e.logger, pod.UID, container.ContainerID{Type: "containerd", ID: "a"}, false) // before any status: ignored
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	<-e.m.changed

	e.clk.Step(time.Minute)
	e.m.SetContainerReadiness(e.logger, pod.UID, container.ContainerID{Type: "containerd", ID: "a"}, false)
	s, _ := e.m.GetPodStatus(pod.UID)
	if s.ContainerStatuses[0].Ready {
		t.Fatalf("a is still ready")
	}
	for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		c := findCondition(s.Conditions, ct)
		if c.Status != v1.ConditionFalse || c.Reason != podstatus.ContainersNotReady || c.Message != "containers with unready status: [a]" ||
			!c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
			t.Fatalf("%s = %+v", ct, c)
		}
	}
	version := e.m.podStatuses[pod.UID].version
	e.m.SetContainerReadiness(e.logger, pod.UID, container.ContainerID{Type: "containerd", ID: "a"}, false)
	e.m.SetContainerReadiness(e.logger, pod.UID, container.ContainerID{Type: "containerd", ID: "nope"}, true)
	if e.m.podStatuses[pod.UID].version != version {
		t.Fatalf("no-op readiness changes bumped the version")
	}
	e.m.SetContainerReadiness(e.logger, pod.UID, container.ContainerID{Type: "containerd", ID: "a"}, true)
	s, _ = e.m.GetPodStatus(pod.UID)
	if c := findCondition(s.Conditions, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready = %+v", c)
	}

	e.m.SetContainerStartup(e.logger, pod.UID, container.ContainerID{Type: "containerd", ID: "b"}, false)
	s, _ = e.m.GetPodStatus(pod.UID)
	if s.ContainerStatuses[1].Started == nil || *s.ContainerStatuses[1].Started {
		t.Fatalf("b started = %v", s.ContainerStatuses[1].Started)
	}
}

func TestIllegalContainerTransitionIsRefused(t *testing.T) {
	pod := makePod("p", "a")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	e := newEnv(t, pod)
	done := runningPodStatus(pod)
	done.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	e.m.SetPodStatus(e.logger, pod, done)
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	if s, _ := e.m.GetPodStatus(pod.UID); s.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("a terminated container came back to life")
	}
}

func TestStartWritesAndResyncs(t *testing.T) {
	pod := makePod("p", "a")
	e := newEnv(t, pod)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	patched := make(chan struct{}, 10)
	e.client.PrependReactor("patch", "pods", func(core.Action) (bool, runtime.Object, error) {
		patched <- struct{}{}
		return false, nil, nil
	})
	e.m.Start(ctx)
	e.m.Start(ctx) // idempotent
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	select {
	case <-patched:
	case <-time.After(10 * time.Second):
		t.Fatalf("no write after SetPodStatus")
	}

	// Drift, then the 10 s tick.
	api := e.apiPod(t, "p")
	api.Status.PodIP = "10.0.0.99"
	api, _ = e.client.CoreV1().Pods("ns").UpdateStatus(e.ctx, api, metav1.UpdateOptions{})
	e.pm.add(api)
	deadline := time.After(10 * time.Second)
	for !e.clk.HasWaiters() {
		select {
		case <-deadline:
			t.Fatalf("the sync loop has no ticker")
		case <-time.After(time.Millisecond):
		}
	}
	e.clk.Step(syncPeriod)
	select {
	case <-patched:
	case <-time.After(10 * time.Second):
		t.Fatalf("no write after the periodic tick")
	}
}

// The 10-second check remembers a pod found in sync by the API pod's resourceVersion and our
// status version: a new resourceVersion (the API's status changed) is compared again.
func TestDriftCheckRemembersPodsInSync(t *testing.T) {
	pod := makePod("p", "a")
	e := newEnv(t, pod)
	e.m.SetPodStatus(e.logger, pod, runningPodStatus(pod))
	e.sync(false)
	api := e.apiPod(t, "p")
	api.ResourceVersion = "7"
	e.pm.add(api)
	if patches, _ := e.sync(true); len(patches) != 0 {
		t.Fatalf("a pod in sync was patched: %v", patches)
	}
	if got := e.m.inSync[api.UID]; got.resourceVersion != "7" || got.version != 1 {
		t.Fatalf("remembered %+v, want resourceVersion 7 at version 1", got)
	}

	api = api.DeepCopy()
	api.Status.PodIP = "10.0.0.99"
	api.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.99"}}
	api, err := e.client.CoreV1().Pods("ns").UpdateStatus(e.ctx, api, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	api.ResourceVersion = "8"
	e.pm.add(api)
	if patches, _ := e.sync(true); len(patches) != 1 {
		t.Fatalf("the drift at a new resourceVersion was not written: %v", patches)
	}
}
