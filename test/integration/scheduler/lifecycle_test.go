package scheduler

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/scheduler"
	"github.com/berth-cluster/berth/pkg/scheduler/config"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// TestUnschedulableThenNodeAdded: the condition and event say why, in kube-scheduler's words;
// a fitting node brings the pod back at once (an event, not the periodic flush).
func TestUnschedulableThenNodeAdded(t *testing.T) {
	c := startWithScheduler(t, nil)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	createNodes(t, ctx, c.Client,
		node("small-1", "1").Obj(),
		node("small-2", "1").Obj(),
		node("tainted", "8").Taints(v1.Taint{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}).Obj())
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("big").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj())
	msg := waitUnschedulable(t, ctx, c.Client, ns, "big")
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, 2 Insufficient cpu. preemption: "
	if !strings.HasPrefix(msg, want) {
		t.Errorf("condition message %q, want it to start with %q", msg, want)
	}
	var event *v1.Event
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=big,reason=FailedScheduling"})
		if err != nil || len(events.Items) == 0 {
			return false, err
		}
		event = &events.Items[0]
		return true, nil
	})
	if err != nil || event.Type != v1.EventTypeWarning || !strings.HasPrefix(event.Message, want) {
		t.Fatalf("FailedScheduling event %+v, %v", event, err)
	}

	// Past the pod's back-off, only an event can bring it back before the 5-minute flush.
	time.Sleep(1500 * time.Millisecond)
	added := time.Now()
	createNodes(t, ctx, c.Client, node("big-node", "4").Obj())
	if got := waitForNode(t, ctx, c.Client, ns, "big", 5*time.Second); got != "big-node" {
		t.Fatalf("bound to %s", got)
	}
	if d := time.Since(added); d > time.Second {
		t.Errorf("bound %v after the node was added, want within 1s", d)
	}
	pod, _ := c.Client.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
	for _, cond := range pod.Status.Conditions {
		if cond.Type == v1.PodScheduled && cond.Status != v1.ConditionTrue {
			t.Errorf("PodScheduled %s after binding", cond.Status)
		}
	}
	// Events are written asynchronously, after the binding.
	var scheduled []v1.Event
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=big,reason=Scheduled"})
		if err != nil {
			return false, err
		}
		scheduled = events.Items
		return len(scheduled) > 0, nil
	})
	if len(scheduled) != 1 || scheduled[0].Message != "Successfully assigned "+ns+"/big to big-node" {
		t.Errorf("Scheduled events %v", scheduled)
	}
}

// TestPreemption: a high-priority pod evicts a lower-priority one and takes its place.
func TestPreemption(t *testing.T) {
	c := startWithScheduler(t, nil)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), "high", metav1.DeleteOptions{})
	})
	createNodes(t, ctx, c.Client, node("only", "2").Obj())
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("low").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1500m"}).Obj())
	waitForNode(t, ctx, c.Client, ns, "low", 10*time.Second)
	confirmDeletions(ctx, c.Client, ns)

	high := st.MakePod().Name("high").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1500m"}).Obj()
	high.Spec.PriorityClassName = "high"
	createPod(t, ctx, c.Client, ns, high)
	if got := waitForNode(t, ctx, c.Client, ns, "high", 20*time.Second); got != "only" {
		t.Fatalf("high bound to %s", got)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, "low", metav1.GetOptions{}); err == nil {
		t.Error("the low-priority pod is still there")
	}
	events, _ := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=low,reason=Preempted"})
	if len(events.Items) == 0 {
		t.Error("no Preempted event on the victim")
	}
}

// TestGatesAndSchedulerNames: a gated pod waits for its gate to go; a pod for another
// scheduler is left alone.
func TestGatesAndSchedulerNames(t *testing.T) {
	c := startWithScheduler(t, nil)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	createNodes(t, ctx, c.Client, node("n", "4").Obj())
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("gated").SchedulingGates("example.com/wait").Obj())
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("other").SchedulerName("someone-else").Obj())
	stayUnbound(t, ctx, c.Client, ns, "gated", 1500*time.Millisecond)
	stayUnbound(t, ctx, c.Client, ns, "other", 0)
	pod, _ := c.Client.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
	var gatedCond *v1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodScheduled {
			gatedCond = &pod.Status.Conditions[i]
		}
	}
	if gatedCond == nil || gatedCond.Reason != v1.PodReasonSchedulingGated {
		t.Errorf("gated pod's condition %+v, want SchedulingGated", gatedCond)
	}
	pod.Spec.SchedulingGates = nil
	if _, err := c.Client.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForNode(t, ctx, c.Client, ns, "gated", 5*time.Second)
	other, _ := c.Client.CoreV1().Pods(ns).Get(ctx, "other", metav1.GetOptions{})
	if other.Spec.NodeName != "" || len(other.Status.Conditions) != 0 {
		t.Errorf("the other scheduler's pod was touched: %+v", other.Status)
	}
}

// TestTwoProfiles: a second profile in one configuration packs pods (MostAllocated) where the
// default spreads them (LeastAllocated).
func TestTwoProfiles(t *testing.T) {
	kc := &configv1.KubeSchedulerConfiguration{}
	if err := config.Decode([]byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: ImageLocality
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
`), kc); err != nil {
		t.Fatal(err)
	}
	// The scheduler starts once the filler is bound: its first list then has it. Started
	// before, it could score the next pod before its informer had brought the filler in, and
	// find both nodes empty.
	c := framework.Start(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	createNodes(t, ctx, c.Client, node("busy", "4").Obj(), node("idle", "4").Obj())
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("filler").Node("busy").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj())
	runComponent(t, ctx, c, schedulerComponent(kc))
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("spread").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("packed").SchedulerName("packer").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
	if got := waitForNode(t, ctx, c.Client, ns, "spread", 10*time.Second); got != "idle" {
		t.Errorf("default profile put the pod on %s, want idle (least allocated)", got)
	}
	if got := waitForNode(t, ctx, c.Client, ns, "packed", 10*time.Second); got != "busy" {
		t.Errorf("packer profile put the pod on %s, want busy (most allocated)", got)
	}
}

// TestLeaderElection: of two schedulers only the leader binds; when it stops, the other
// takes over.
func TestLeaderElection(t *testing.T) {
	c := framework.Start(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	createNodes(t, ctx, c.Client, node("n", "8").Obj())

	start := func(identity string, address string) (ready chan struct{}, stop func()) {
		ready = make(chan struct{})
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		cfg, err := config.Complete(&configv1.KubeSchedulerConfiguration{})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			done <- scheduler.Run(sctx, rest.CopyConfig(c.Config), cfg, scheduler.ServerOptions{Identity: identity, Ready: ready, Address: address})
		}()
		return ready, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("scheduler %s: %v", identity, err)
			}
		}
	}
	readyA, stopA := start("sched-a", "127.0.0.1:0")
	select {
	case <-readyA:
	case <-time.After(30 * time.Second):
		t.Fatal("scheduler a never led")
	}
	readyB, stopB := start("sched-b", "")
	defer stopB()
	lease, err := c.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil || holder(lease) != "sched-a" {
		t.Fatalf("lease holder %q, %v; want sched-a", holder(lease), err)
	}
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("first").Obj())
	waitForNode(t, ctx, c.Client, ns, "first", 10*time.Second)
	select {
	case <-readyB:
		t.Fatal("scheduler b leads while a does")
	default:
	}

	stopA()
	select {
	case <-readyB:
	case <-time.After(30 * time.Second):
		t.Fatal("scheduler b did not take over")
	}
	lease, _ = c.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if holder(lease) != "sched-b" {
		t.Errorf("lease holder %q after a stopped, want sched-b", holder(lease))
	}
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("second").Obj())
	waitForNode(t, ctx, c.Client, ns, "second", 10*time.Second)
}

// TestLeaderElectionLost: a scheduler whose Lease is taken from it stops and returns
// ErrLeaderElectionLost (berth up then campaigns again), rather than hanging with its
// informers running.
func TestLeaderElectionLost(t *testing.T) {
	c := framework.Start(t)
	ctx := testContext(t)
	cfg, err := config.Complete(&configv1.KubeSchedulerConfiguration{})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- scheduler.Run(ctx, rest.CopyConfig(c.Config), cfg, scheduler.ServerOptions{Identity: "victim", Ready: ready})
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the scheduler never led")
	}
	// Another instance takes the Lease for a long time.
	leases := c.Client.CoordinationV1().Leases("kube-system")
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, "kube-scheduler", metav1.GetOptions{})
		if err != nil {
			return err
		}
		lease.Spec.HolderIdentity = ptr.To("thief")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, scheduler.ErrLeaderElectionLost) {
			t.Errorf("Run returned %v, want ErrLeaderElectionLost", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the scheduler did not return after losing its Lease")
	}
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestMetrics: /healthz answers and /metrics carries kube-scheduler's metrics.
func TestMetrics(t *testing.T) {
	address := "127.0.0.1:18259"
	c := framework.Start(t, framework.Options{Components: []cluster.Component{{Name: "scheduler", Run: func(ctx context.Context, admin *rest.Config) error {
		cfg, err := config.Complete(&configv1.KubeSchedulerConfiguration{LeaderElection: componentbaseconfigv1alpha1.LeaderElectionConfiguration{LeaderElect: ptr.To(false)}})
		if err != nil {
			return err
		}
		return scheduler.Run(ctx, admin, cfg, scheduler.ServerOptions{Address: address})
	}}}})
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	createNodes(t, ctx, c.Client, node("n", "4").Obj(), node("m", "4").Obj()) // two, so that Score runs
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("p").Obj())
	waitForNode(t, ctx, c.Client, ns, "p", 10*time.Second)
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("never").NodeSelector(map[string]string{"no": "such"}).Obj())
	waitUnschedulable(t, ctx, c.Client, ns, "never")
	get := func(path string) string {
		resp, err := http.Get("http://" + address + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get("/healthz"); got != "ok" {
		t.Errorf("/healthz %q", got)
	}
	// The metrics are the process's: other tests' schedulers add to the counts, so only
	// their presence is checked.
	m := get("/metrics")
	for _, want := range []string{
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}`,
		`scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"}`,
		`scheduler_pending_pods{queue="unschedulable"} 1`,
		`scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Filter"`,
		`scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Score"`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
