package prober

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	utilexec "k8s.io/utils/exec"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/prober/results"
)

type fakeStatus struct{ status v1.PodStatus }

func (f *fakeStatus) GetPodStatus(types.UID) (v1.PodStatus, bool) { return f.status, true }

// fakeRunner answers exec probes: exit 0 while healthy, else exit 1 saying so.
type fakeRunner struct {
	healthy bool
	calls   int
}

func (f *fakeRunner) RunInContainer(context.Context, container.ContainerID, []string, time.Duration) ([]byte, error) {
	f.calls++
	if f.healthy {
		return []byte("ok"), nil
	}
	return []byte("not healthy"), utilexec.CodeExitError{Err: errors.New("exit 1"), Code: 1}
}

func probePod(c v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func runningStatus(id string, started bool) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.2", ContainerStatuses: []v1.ContainerStatus{{
		Name: "c", ContainerID: "containerd://" + id, Started: &started,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now().Add(-time.Minute))}},
	}}}
}

func execProbe(failure, success int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: 1, FailureThreshold: failure, SuccessThreshold: success}
}

func newTestManager(t *testing.T, status *fakeStatus, runner *fakeRunner) (*Manager, *record.FakeRecorder) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	recorder := record.NewFakeRecorder(100)
	return NewManager(ctx, status, runner, recorder, nil), recorder
}

func mustResult(t *testing.T, m results.Manager, id string, want results.Result) {
	t.Helper()
	got, ok := m.Get(container.ParseContainerID("containerd://" + id))
	if !ok || got != want {
		t.Fatalf("result of %s = %v (known %t), want %v", id, got, ok, want)
	}
}

// drain empties a results Manager's Updates, so that Set never blocks.
func drain(m results.Manager) {
	for {
		select {
		case <-m.Updates():
		default:
			return
		}
	}
}

func TestReadinessStartsNotReadyAndNeedsSuccessThreshold(t *testing.T) {
	status := &fakeStatus{runningStatus("a", true)}
	runner := &fakeRunner{healthy: true}
	m, _ := newTestManager(t, status, runner)
	c := v1.Container{Name: "c", ReadinessProbe: execProbe(3, 2)}
	w := newWorker(m, readiness, probePod(c), c)

	w.doProbe(context.Background())
	mustResult(t, m.readiness, "a", results.Failure) // one success of two
	w.doProbe(context.Background())
	mustResult(t, m.readiness, "a", results.Success)
	drain(m.readiness)
	if ready, known := m.Ready("uid", "c", "containerd://a"); !ready || !known {
		t.Errorf("Ready = %t, %t; want true, true", ready, known)
	}
}

func TestLivenessFailureThresholdHoldsUntilNewContainer(t *testing.T) {
	status := &fakeStatus{runningStatus("a", true)}
	runner := &fakeRunner{healthy: false}
	m, recorder := newTestManager(t, status, runner)
	c := v1.Container{Name: "c", LivenessProbe: execProbe(3, 1)}
	w := newWorker(m, liveness, probePod(c), c)

	for i := 0; i < 2; i++ {
		w.doProbe(context.Background())
		mustResult(t, m.liveness, "a", results.Success) // below the failure threshold
	}
	w.doProbe(context.Background())
	mustResult(t, m.liveness, "a", results.Failure)
	drain(m.liveness)
	if ev := <-recorder.Events; !strings.Contains(ev, "Warning Unhealthy Liveness probe failed: not healthy") {
		t.Errorf("event %q, want a Liveness probe failed warning", ev)
	}

	// On hold: the failed container is not probed again.
	calls := runner.calls
	w.doProbe(context.Background())
	if runner.calls != calls {
		t.Errorf("the worker probed a container that is being restarted")
	}
	// Its successor starts from Success.
	status.status = runningStatus("b", true)
	runner.healthy = true
	w.doProbe(context.Background())
	mustResult(t, m.liveness, "b", results.Success)
	if _, ok := m.liveness.Get(container.ParseContainerID("containerd://a")); ok {
		t.Errorf("the old container's verdict is still kept")
	}
}

func TestStartupProbeHoldsLivenessBack(t *testing.T) {
	status := &fakeStatus{runningStatus("a", false)}
	runner := &fakeRunner{healthy: false}
	m, _ := newTestManager(t, status, runner)
	c := v1.Container{Name: "c", LivenessProbe: execProbe(1, 1), StartupProbe: execProbe(30, 1)}
	w := newWorker(m, liveness, probePod(c), c)
	w.doProbe(context.Background())
	if runner.calls != 0 {
		t.Errorf("liveness probed %d times before the startup probe passed", runner.calls)
	}
	mustResult(t, m.liveness, "a", results.Success)

	s := newWorker(m, startup, probePod(c), c)
	s.doProbe(context.Background())
	mustResult(t, m.startup, "a", results.Unknown) // one failure of 30
	if started, known := m.Started("uid", "c", "containerd://a"); started || !known {
		t.Errorf("Started = %t, %t; want false, true", started, known)
	}
}

func TestWorkerEndsWithTerminatedContainerThatWillNotRestart(t *testing.T) {
	status := &fakeStatus{v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{
		Name: "c", ContainerID: "containerd://a",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}},
	}}}}
	m, _ := newTestManager(t, status, &fakeRunner{})
	c := v1.Container{Name: "c", ReadinessProbe: execProbe(3, 1)}
	pod := probePod(c)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	w := newWorker(m, readiness, pod, c)
	if w.doProbe(context.Background()) {
		t.Error("the worker keeps probing a container that will never run again")
	}
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	if !newWorker(m, readiness, pod, c).doProbe(context.Background()) {
		t.Error("the worker stopped though the container will restart")
	}
}
