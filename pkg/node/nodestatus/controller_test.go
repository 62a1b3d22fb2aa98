package nodestatus

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// fakeRuntime answers what the node status asks of a runtime; anything else panics.
type fakeRuntime struct {
	container.Runtime

	mu     sync.Mutex
	ready  bool
	images []container.Image
}

func (f *fakeRuntime) Type() string                            { return "containerd" }
func (f *fakeRuntime) Version(context.Context) (string, error) { return "1.6.20", nil }

// GetImageList stands in for the node's image list (images.List).
func (f *fakeRuntime) GetImageList() ([]container.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.images, nil
}
func (f *fakeRuntime) Status(context.Context) (*container.RuntimeStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &container.RuntimeStatus{Conditions: []container.RuntimeCondition{
		{Type: container.RuntimeReady, Status: f.ready},
		{Type: container.NetworkReady, Status: f.ready, Reason: "NetworkPluginNotReady"},
	}}, nil
}

func (f *fakeRuntime) setReady(ready bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready = ready
}

// newFakeClient is a clientset whose API server gives every new object a UID, as a real one.
func newFakeClient(objects ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objects...)
	n := 0
	client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if obj, ok := action.(clienttesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetUID() == "" {
			n++
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
		}
		return false, nil, nil
	})
	return client
}

type harness struct {
	client   *fake.Clientset
	runtime  *fakeRuntime
	state    *RuntimeState
	recorder *record.FakeRecorder
	c        *Controller
}

func newHarness(t *testing.T, cfg Config, objects ...runtime.Object) *harness {
	h := &harness{
		client:   newFakeClient(objects...),
		runtime:  &fakeRuntime{images: []container.Image{{ID: "sha256:p", RepoTags: []string{"berth/pause:1"}, Size: 1000}}},
		state:    NewRuntimeState(),
		recorder: record.NewFakeRecorder(100),
	}
	if cfg.MachineInfo == nil {
		cfg.MachineInfo = func() (*MachineInfo, error) { return testMachine(), nil }
	}
	if cfg.NodeIP == nil {
		cfg.NodeIP = net.ParseIP("127.0.0.1")
	}
	if cfg.Images == nil {
		cfg.Images = h.runtime
	}
	h.c = New(h.client, cfg, h.runtime, h.state, h.recorder)
	return h
}

// run runs the controller until the test ends.
func (h *harness) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the controller did not stop")
		}
	})
}

func (h *harness) node(t *testing.T, name string) *v1.Node {
	t.Helper()
	node, err := h.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// events returns the events recorded so far.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestRegisterNewNodeAndBecomeReady(t *testing.T) {
	h := newHarness(t, Config{
		NodeName: "node-a", KubeletVersion: "v1.37.2", PodCIDR: "10.244.1.0/24,fd00::/64",
		Labels: map[string]string{"team": "a", v1.LabelHostname: "override"},
		Taints: []v1.Taint{{Key: "dedicated", Value: "a", Effect: v1.TaintEffectNoSchedule}},
	})
	h.run(t)
	waitFor(t, "the node to be registered", 5*time.Second, func() bool {
		_, err := h.c.GetNode()
		return err == nil
	})
	node := h.node(t, "node-a")
	wantLabels := map[string]string{
		"kubernetes.io/hostname": "override", "kubernetes.io/os": "linux", "kubernetes.io/arch": node.Labels["kubernetes.io/arch"],
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": node.Labels["kubernetes.io/arch"], "team": "a",
	}
	if diff := cmp.Diff(wantLabels, node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if node.Annotations[controllerManagedAttachAnnotation] != "true" {
		t.Errorf("annotations %v, want the attach/detach one", node.Annotations)
	}
	if node.Spec.PodCIDR != "10.244.1.0/24" || !cmp.Equal(node.Spec.PodCIDRs, []string{"10.244.1.0/24", "fd00::/64"}) {
		t.Errorf("pod CIDRs %q %q", node.Spec.PodCIDR, node.Spec.PodCIDRs)
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v, want the configured one and no other", node.Spec.Taints)
	}
	if ready := findCondition(node, v1.NodeReady); ready == nil || ready.Status != v1.ConditionFalse {
		t.Errorf("a node whose runtime is not up registered with Ready %v", ready)
	}
	if len(node.Status.Images) != 1 || node.Status.Images[0].Names[0] != "berth/pause:1" {
		t.Errorf("images %v", node.Status.Images)
	}

	// The runtime comes up: fastStatusUpdateOnce makes the node Ready within a few ticks.
	start := time.Now()
	h.runtime.setReady(true)
	waitFor(t, "the node to be Ready", 2*time.Second, func() bool {
		ready := findCondition(h.node(t, "node-a"), v1.NodeReady)
		return ready != nil && ready.Status == v1.ConditionTrue
	})
	if took := time.Since(start); took > time.Second {
		t.Errorf("the node took %v to become Ready, want under a second", took)
	}
	want := []string{
		"Normal Starting Starting kubelet.",
		"Normal NodeHasSufficientMemory Node node-a status is now: NodeHasSufficientMemory",
		"Normal NodeHasNoDiskPressure Node node-a status is now: NodeHasNoDiskPressure",
		"Normal NodeHasSufficientPID Node node-a status is now: NodeHasSufficientPID",
		"Normal NodeReady Node node-a status is now: NodeReady",
	}
	waitFor(t, "the events", 2*time.Second, func() bool { return len(h.recorder.Events) >= len(want) })
	if diff := cmp.Diff(want, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRegisterExistingNode(t *testing.T) {
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "first-uid",
			Labels:      map[string]string{"kubernetes.io/hostname": "old-name", "kubernetes.io/os": "linux", "user": "keep"},
			Annotations: map[string]string{"note": "keep"}},
		Spec: v1.NodeSpec{PodCIDR: "10.244.9.0/24", PodCIDRs: []string{"10.244.9.0/24"}, Unschedulable: true},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{"cpu": resource.MustParse("4"), "hugepages-4Mi": resource.MustParse("8Mi")},
			Allocatable: v1.ResourceList{"cpu": resource.MustParse("4"), "hugepages-4Mi": resource.MustParse("8Mi")},
		},
	}
	h := newHarness(t, Config{NodeName: "node-a", PodCIDR: "10.244.1.0/24"}, existing)
	h.mustRegister(t)
	node := h.node(t, "node-a")
	if node.UID != "first-uid" {
		t.Errorf("the node was replaced: UID %q", node.UID)
	}
	if node.Labels["kubernetes.io/hostname"] != "node-a" || node.Labels["user"] != "keep" || node.Labels["beta.kubernetes.io/os"] != "linux" {
		t.Errorf("labels %v: want the default ones put back and the others kept", node.Labels)
	}
	if node.Annotations["note"] != "keep" || node.Annotations[controllerManagedAttachAnnotation] != "true" {
		t.Errorf("annotations %v", node.Annotations)
	}
	if node.Spec.PodCIDR != "10.244.9.0/24" || !node.Spec.Unschedulable {
		t.Errorf("the spec changed: %+v", node.Spec)
	}
	if _, ok := node.Status.Capacity["hugepages-4Mi"]; ok {
		t.Errorf("a huge page size the machine lacks stayed: %v", node.Status.Capacity)
	}
	if q := node.Status.Capacity["hugepages-2Mi"]; q.String() != "0" {
		t.Errorf("capacity %v: want the machine's huge page sizes", node.Status.Capacity)
	}
	if diff := cmp.Diff([]string{
		"Normal NodeHasSufficientMemory Node node-a status is now: NodeHasSufficientMemory",
		"Normal NodeHasNoDiskPressure Node node-a status is now: NodeHasNoDiskPressure",
		"Normal NodeHasSufficientPID Node node-a status is now: NodeHasSufficientPID",
	}, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// mustRegister registers the node without running the controller's loops.
func (h *harness) mustRegister(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.c.mu.Lock()
	h.c.registerWithAPIServer(ctx)
	h.c.mu.Unlock()
	if !h.c.registered {
		t.Fatal("the node was not registered")
	}
}

func TestRegistrationRetries(t *testing.T) {
	h := newHarness(t, Config{NodeName: "node-a"})
	failures := 2
	h.client.PrependReactor("create", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, fmt.Errorf("the API server is starting")
		}
		return false, nil, nil
	})
	h.mustRegister(t)
	if failures != 0 {
		t.Errorf("%d failures left", failures)
	}
	h.node(t, "node-a")
}

// statusPatches counts the PATCHes of nodes/status so far.
func statusPatches(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "nodes" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestSyncNodeStatusSendsOnlyChanges(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, Config{NodeName: "node-a", Clock: clock})
	h.state.clock = clock
	h.mustRegister(t)
	ctx := context.Background()
	sync := func() {
		h.c.syncNodeStatus(ctx)
		// The informer is not running: the controller reads the node from the API server.
	}
	tests := []struct {
		name      string
		change    func()
		step      time.Duration
		wantPatch bool
		check     func(*v1.Node)
	}{
		{name: "first sync after start: always sent", wantPatch: true},
		{name: "nothing changed: the Lease is the heartbeat", step: 10 * time.Second},
		{name: "the runtime comes up: sent", step: 10 * time.Second, wantPatch: true,
			change: func() { h.state.UpdateFromStatus(readyStatus(), clock.Now().Add(10*time.Second)) },
			check: func(n *v1.Node) {
				if r := findCondition(n, v1.NodeReady); r.Status != v1.ConditionTrue {
					t.Errorf("Ready %v", r)
				}
			}},
		{name: "unchanged again", step: 10 * time.Second,
			change: func() { h.state.SetRuntimeSync(clock.Now().Add(10 * time.Second)) }},
		{name: "a new image: sent", step: 10 * time.Second, wantPatch: true,
			change: func() {
				h.state.SetRuntimeSync(clock.Now().Add(10 * time.Second))
				h.runtime.mu.Lock()
				h.runtime.images = append(h.runtime.images, container.Image{ID: "b", RepoTags: []string{"busybox:1"}, Size: 5})
				h.runtime.mu.Unlock()
			},
			check: func(n *v1.Node) {
				if len(n.Status.Images) != 2 {
					t.Errorf("images %v", n.Status.Images)
				}
			}},
		{name: "the report period (5 min with up to 2.5 min of spread) passed: sent", step: 8 * time.Minute, wantPatch: true,
			change: func() { h.state.SetRuntimeSync(clock.Now().Add(8 * time.Minute)) }},
		{name: "and then not for another while", step: 10 * time.Second,
			change: func() { h.state.SetRuntimeSync(clock.Now().Add(10 * time.Second)) }},
	}
	for _, tt := range tests {
		if tt.change != nil {
			tt.change()
		}
		clock.Step(tt.step)
		before := statusPatches(h.client)
		sync()
		if got := statusPatches(h.client) - before; (got == 1) != tt.wantPatch || got > 1 {
			t.Errorf("%s: %d patches, want patch=%v", tt.name, got, tt.wantPatch)
		}
		node := h.node(t, "node-a")
		if tt.wantPatch {
			if hb := findCondition(node, v1.NodeReady).LastHeartbeatTime; !hb.Time.Equal(clock.Now()) {
				t.Errorf("%s: heartbeat %v, want %v", tt.name, hb, clock.Now())
			}
		}
		if tt.check != nil {
			tt.check(node)
		}
	}
}

func readyStatus() *container.RuntimeStatus {
	return &container.RuntimeStatus{Conditions: []container.RuntimeCondition{
		{Type: container.RuntimeReady, Status: true}, {Type: container.NetworkReady, Status: true}}}
}

func TestSchedulableEvents(t *testing.T) {
	h := newHarness(t, Config{NodeName: "node-a"})
	h.mustRegister(t)
	h.events()
	ctx := context.Background()
	for _, tt := range []struct {
		unschedulable bool
		want          []string
	}{
		{false, nil},
		{true, []string{"Normal NodeNotSchedulable Node node-a status is now: NodeNotSchedulable"}},
		{true, nil},
		{false, []string{"Normal NodeSchedulable Node node-a status is now: NodeSchedulable"}},
	} {
		node := h.node(t, "node-a")
		node.Spec.Unschedulable = tt.unschedulable
		if _, err := h.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.c.syncNodeStatus(ctx)
		if diff := cmp.Diff(tt.want, h.events()); diff != "" {
			t.Errorf("unschedulable=%v: events (-want +got):\n%s", tt.unschedulable, diff)
		}
	}
}

func TestLeaseCreatedAndRenewed(t *testing.T) {
	h := newHarness(t, Config{NodeName: "node-a", LeaseRenewInterval: 50 * time.Millisecond})
	h.run(t)
	var first *coordinationv1.Lease
	waitFor(t, "the lease", 5*time.Second, func() bool {
		l, err := h.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(context.Background(), "node-a", metav1.GetOptions{})
		first = l
		return err == nil
	})
	node := h.node(t, "node-a")
	if *first.Spec.HolderIdentity != "node-a" || *first.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("lease spec %+v", first.Spec)
	}
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: node.UID}}
	if diff := cmp.Diff(wantOwner, first.OwnerReferences); diff != "" || node.UID == "" {
		t.Errorf("owner (-want +got):\n%s", diff)
	}
	waitFor(t, "the lease to be renewed", 5*time.Second, func() bool {
		l, err := h.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(context.Background(), "node-a", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(first.Spec.RenewTime.Time)
	})
	updates := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "leases" {
			updates++
		}
	}
	if updates == 0 {
		t.Error("the lease was never updated")
	}
}

func TestGetNodeBeforeRun(t *testing.T) {
	h := newHarness(t, Config{NodeName: "node-a"})
	if _, err := h.c.GetNode(); err == nil || !strings.Contains(err.Error(), "not known yet") {
		t.Errorf("GetNode before Run: %v", err)
	}
}
