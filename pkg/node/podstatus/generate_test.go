package podstatus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/container"
)

var nodeIP = []net.IP{net.ParseIP("192.0.2.10")}

func failStart(reasons *ReasonCache, pod *v1.Pod, name string, err error, msg string) {
	r := container.NewSyncResult(container.StartContainer, name)
	r.Fail(err, msg)
	reasons.Update(pod.UID, container.PodSyncResult{SyncResults: []*container.SyncResult{r}})
}

func TestWaitingReasons(t *testing.T) {
	crashMsg := "back-off 40s restarting failed container=a pod=p_ns(p-uid)"
	tests := []struct {
		err     error
		message string
		// exited: the container ran before and exited (a restart failed, or it crash-loops).
		exited bool
	}{
		{container.ErrImagePull, `failed to pull image "img-a": not found`, false},
		{container.ErrImagePullBackOff, `Back-off pulling image "img-a"`, false},
		{container.ErrImageNeverPull, `Container image "img-a" is not present with pull policy of Never`, false},
		{container.ErrInvalidImageName, `Failed to apply default image tag "UPPER": invalid reference format`, false},
		{container.ErrImageInspect, "inspect failed", false},
		{container.ErrCreateContainerConfig, `secret "s" not found`, false},
		{container.ErrCreateContainer, "create failed", false},
		{container.ErrRunContainer, "start failed", false},
		{container.ErrPostStartHook, "hook failed", false},
		{container.ErrPreStartHook, "pre-start failed", false},
		{container.ErrCrashLoopBackOff, crashMsg, true},
		{container.ErrRunContainer, "start failed", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/exited=%v", tt.err, tt.exited), func(t *testing.T) {
			pod := makePod("p").containers("a").obj()
			rt := runtimeOf(pod)
			if tt.exited {
				rt.exited("a", 1)
			}
			reasons := NewReasonCache()
			failStart(reasons, pod, "a", tt.err, tt.message)
			s := GenerateAPIPodStatus(pod, rt.obj(), false, reasons, nodeIP, v1.PodStatus{})
			cs := findCS(t, s.ContainerStatuses, "a")
			if cs.State.Waiting == nil || cs.State.Waiting.Reason != tt.err.Error() || cs.State.Waiting.Message != tt.message {
				t.Fatalf("state = %+v, want waiting %v %q", cs.State, tt.err, tt.message)
			}
			if tt.exited {
				lt := cs.LastTerminationState.Terminated
				if lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" || lt.ContainerID == "" {
					t.Fatalf("lastState = %+v, want the exited instance", cs.LastTerminationState)
				}
			}
			if cs.Ready || cs.Started == nil || *cs.Started {
				t.Fatalf("a waiting container is neither ready nor started: %+v", cs)
			}
			if s.Phase != v1.PodPending && !tt.exited {
				t.Fatalf("phase = %s, want Pending", s.Phase)
			}
			if tt.exited && s.Phase != v1.PodRunning {
				t.Fatalf("a crash-looping pod with restartPolicy Always is Running, got %s", s.Phase)
			}
		})
	}
}

func TestDefaultWaiting(t *testing.T) {
	t.Run("ContainerCreating", func(t *testing.T) {
		pod := makePod("p").containers("a").obj()
		s := GenerateAPIPodStatus(pod, nil, false, NewReasonCache(), nodeIP, v1.PodStatus{})
		cs := findCS(t, s.ContainerStatuses, "a")
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != ContainerCreating || cs.Image != "img-a" {
			t.Fatalf("got %+v", cs)
		}
		if c := cond(s, v1.PodReadyToStartContainers); c.Status != v1.ConditionFalse || c.Reason != PodSandboxNotReady || c.Message != msgNoPodSandbox {
			t.Fatalf("PodReadyToStartContainers = %+v", c)
		}
	})
	t.Run("PodInitializing", func(t *testing.T) {
		pod := makePod("p").init("i").containers("a").obj()
		rt := runtimeOf(pod).running("i")
		s := GenerateAPIPodStatus(pod, rt.obj(), false, NewReasonCache(), nodeIP, v1.PodStatus{})
		if cs := findCS(t, s.ContainerStatuses, "a"); cs.State.Waiting == nil || cs.State.Waiting.Reason != PodInitializing {
			t.Fatalf("app container = %+v", cs)
		}
		if cs := findCS(t, s.InitContainerStatuses, "i"); cs.State.Running == nil || cs.Ready {
			t.Fatalf("a running init container is not ready: %+v", cs)
		}
		c := cond(s, v1.PodInitialized)
		if c.Status != v1.ConditionFalse || c.Reason != ContainersNotInitialized || c.Message != "containers with incomplete status: [i]" {
			t.Fatalf("Initialized = %+v", c)
		}
		if s.Phase != v1.PodPending {
			t.Fatalf("phase = %s", s.Phase)
		}
	})
}

func TestRunningAndTerminated(t *testing.T) {
	pod := makePod("p").containers("a", "b").restart(v1.RestartPolicyAlways).obj()
	rt := runtimeOf(pod).exited("b", 0).running("b").running("a")
	s := GenerateAPIPodStatus(pod, rt.obj(), false, NewReasonCache(), nodeIP, v1.PodStatus{})
	a := findCS(t, s.ContainerStatuses, "a")
	if a.State.Running == nil || !a.State.Running.StartedAt.Time.Equal(t0.Add(3*time.Second+100*time.Millisecond)) {
		t.Fatalf("a = %+v", a.State)
	}
	if !a.Ready || a.Started == nil || !*a.Started || a.ContainerID != "containerd://a-d" || a.ImageID != "sha256:a" || a.Image != "docker.io/library/img-a:latest" {
		t.Fatalf("a = %+v", a)
	}
	b := findCS(t, s.ContainerStatuses, "b")
	lt := b.LastTerminationState.Terminated
	if b.State.Running == nil || b.RestartCount != 1 || lt == nil || lt.Reason != "Completed" || lt.ContainerID != "containerd://b-b" ||
		!lt.FinishedAt.Time.Equal(t0.Add(1500*time.Millisecond)) {
		t.Fatalf("b = %+v", b)
	}
	if s.Phase != v1.PodRunning {
		t.Fatalf("phase = %s", s.Phase)
	}
	for _, ct := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		if c := cond(s, ct); c == nil || c.Status != v1.ConditionTrue || c.ObservedGeneration != 1 {
			t.Fatalf("%s = %+v", ct, c)
		}
	}
	if s.ContainerStatuses[0].Name != "a" || s.ContainerStatuses[1].Name != "b" {
		t.Fatalf("app statuses must be sorted by name")
	}
}

func TestTerminatedReasonsAndMessages(t *testing.T) {
	tests := []struct {
		name     string
		exit     int
		reason   string // from the runtime
		message  string // from the runtime (the termination message file)
		policy   v1.TerminationMessagePolicy
		log      string
		want     string
		wantMsg  string
		wantLogs int
	}{
		{name: "completed", exit: 0, want: "Completed"},
		{name: "error", exit: 2, want: "Error"},
		{name: "oom", exit: 137, reason: "OOMKilled", want: "OOMKilled"},
		{name: "cannot run", exit: 128, reason: "ContainerCannotRun", message: "exec: not found", want: "ContainerCannotRun", wantMsg: "exec: not found"},
		{name: "message file", exit: 1, reason: "Error", message: "bye", policy: v1.TerminationMessageFallbackToLogsOnError, log: "ignored", want: "Error", wantMsg: "bye"},
		{name: "fallback to logs", exit: 1, reason: "Error", policy: v1.TerminationMessageFallbackToLogsOnError, log: "boom\n", want: "Error", wantMsg: "boom\n", wantLogs: 1},
		{name: "no fallback on success", exit: 0, reason: "Completed", policy: v1.TerminationMessageFallbackToLogsOnError, log: "x", want: "Completed"},
		{name: "no fallback for File", exit: 1, reason: "Error", policy: v1.TerminationMessageReadFile, log: "x", want: "Error"},
		{name: "no fallback when it cannot run", exit: 1, reason: "ContainerCannotRun", policy: v1.TerminationMessageFallbackToLogsOnError, log: "x", want: "ContainerCannotRun"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := makePod("p").containers("a").restart(v1.RestartPolicyNever).with(func(p *v1.Pod) {
				p.Spec.Containers[0].TerminationMessagePolicy = tt.policy
			}).obj()
			rt := runtimeOf(pod).exited("a", tt.exit)
			rt.last().Reason, rt.last().Message = tt.reason, tt.message
			calls := 0
			logs := func(_ context.Context, _ *v1.Pod, id container.ContainerID, opts *v1.PodLogOptions, stdout, _ io.Writer) error {
				calls++
				if id != rt.last().ID || opts.TailLines == nil || *opts.TailLines != 80 {
					t.Errorf("logs asked for %v %+v", id, opts)
				}
				_, err := io.WriteString(stdout, tt.log)
				return err
			}
			s := GenerateAPIPodStatus(pod, rt.obj(), false, NewReasonCache(), nodeIP, v1.PodStatus{}, WithContainerLogs(logs))
			term := findCS(t, s.ContainerStatuses, "a").State.Terminated
			if term == nil || term.Reason != tt.want || term.Message != tt.wantMsg || term.ExitCode != int32(tt.exit) || term.ContainerID == "" {
				t.Fatalf("terminated = %+v, want reason %q message %q", term, tt.want, tt.wantMsg)
			}
			if calls != tt.wantLogs {
				t.Fatalf("logs read %d times, want %d", calls, tt.wantLogs)
			}
			if tt.wantLogs > 0 {
				// A second generation from the first reuses the message rather than reading the log again.
				GenerateAPIPodStatus(pod, rt.obj(), false, NewReasonCache(), nodeIP, s, WithContainerLogs(logs))
				if calls != 1 {
					t.Fatalf("the log was read again")
				}
			}
		})
	}
}

func TestTerminationMessageFromLogsIsBounded(t *testing.T) {
	pod := makePod("p").containers("a").restart(v1.RestartPolicyNever).with(func(p *v1.Pod) {
		p.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	}).obj()
	rt := runtimeOf(pod).exited("a", 1)
	long := strings.Repeat("0123456789", 1000) + "END"
	logs := func(_ context.Context, _ *v1.Pod, _ container.ContainerID, _ *v1.PodLogOptions, stdout, _ io.Writer) error {
		for i := 0; i < len(long); i += 333 {
			_, _ = io.WriteString(stdout, long[i:min(i+333, len(long))])
		}
		return nil
	}
	s := GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, v1.PodStatus{}, WithContainerLogs(logs))
	msg := s.ContainerStatuses[0].State.Terminated.Message
	if len(msg) != TerminationMessageLogBytes || !strings.HasSuffix(msg, "END") {
		t.Fatalf("message of %d bytes ending %q", len(msg), msg[len(msg)-5:])
	}

	failing := func(context.Context, *v1.Pod, container.ContainerID, *v1.PodLogOptions, io.Writer, io.Writer) error {
		return errors.New("gone")
	}
	s = GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, v1.PodStatus{}, WithContainerLogs(failing))
	if got := s.ContainerStatuses[0].State.Terminated.Message; got != "Error on reading termination message from logs: gone" {
		t.Fatalf("message = %q", got)
	}
}

func TestLostContainer(t *testing.T) {
	pod := makePod("p").containers("a").obj()
	old := GenerateAPIPodStatus(pod, runtimeOf(pod).running("a").obj(), false, nil, nodeIP, v1.PodStatus{})
	// The runtime no longer has the container.
	s := GenerateAPIPodStatus(pod, runtimeOf(pod).obj(), false, nil, nodeIP, old)
	cs := findCS(t, s.ContainerStatuses, "a")
	lt := cs.LastTerminationState.Terminated
	if cs.State.Waiting == nil || lt == nil || lt.Reason != ContainerStatusUnknown || lt.ExitCode != 137 || cs.RestartCount != 1 {
		t.Fatalf("got %+v", cs)
	}
	if s.Phase != v1.PodRunning {
		t.Fatalf("a pod whose container vanished is not Pending again: %s", s.Phase)
	}

	// The runtime reports the container as unknown.
	rt := runtimeOf(pod).add("a", container.ContainerStateUnknown, 0, 0)
	s = GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, old)
	if term := findCS(t, s.ContainerStatuses, "a").State.Terminated; term == nil || term.Reason != ContainerStatusUnknown || term.Message != msgLostWhenTerminated {
		t.Fatalf("got %+v", s.ContainerStatuses)
	}
}

func TestInitContainerRemovedAfterInitialization(t *testing.T) {
	pod := makePod("p").init("i").containers("a").obj()
	s := GenerateAPIPodStatus(pod, runtimeOf(pod).running("a").obj(), false, nil, nodeIP, v1.PodStatus{})
	term := findCS(t, s.InitContainerStatuses, "i").State.Terminated
	if term == nil || term.Reason != "Completed" || term.ExitCode != 0 {
		t.Fatalf("init = %+v", s.InitContainerStatuses)
	}
	if !s.InitContainerStatuses[0].Ready || cond(s, v1.PodInitialized).Status != v1.ConditionTrue {
		t.Fatalf("the pod is initialized: %+v", s)
	}
}

func TestSidecarReadiness(t *testing.T) {
	pod := makePod("p").sidecar("side").containers("a").obj()
	s := GenerateAPIPodStatus(pod, runtimeOf(pod).running("side").obj(), false, nil, nodeIP, v1.PodStatus{})
	side := findCS(t, s.InitContainerStatuses, "side")
	if !side.Ready || side.Started == nil || !*side.Started {
		t.Fatalf("a running sidecar without probes is started and ready: %+v", side)
	}
	if c := cond(s, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Fatalf("started sidecars initialize the pod: %+v", c)
	}
	c := cond(s, v1.ContainersReady)
	if c.Status != v1.ConditionFalse || c.Message != "containers with unready status: [a]" {
		t.Fatalf("ContainersReady = %+v", c)
	}
}

func TestProbeResults(t *testing.T) {
	pod := makePod("p").containers("a", "b").obj()
	rt := runtimeOf(pod).running("a").running("b")
	probes := probeResults{ready: map[string]bool{"containerd://a-b": false}, started: map[string]bool{"containerd://b-c": false}}
	s := GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, v1.PodStatus{}, WithProbeResults(probes))
	a, b := findCS(t, s.ContainerStatuses, "a"), findCS(t, s.ContainerStatuses, "b")
	if a.Ready || !*a.Started || b.Ready || *b.Started {
		t.Fatalf("a = ready %v started %v; b = ready %v started %v", a.Ready, *a.Started, b.Ready, *b.Started)
	}
	c := cond(s, v1.PodReady)
	if c.Status != v1.ConditionFalse || c.Reason != ContainersNotReady || c.Message != "containers with unready status: [a b]" {
		t.Fatalf("Ready = %+v", c)
	}
}

type probeResults struct{ started, ready map[string]bool }

func (p probeResults) Started(_ types.UID, _, id string) (bool, bool) {
	v, ok := p.started[id]
	return v, ok
}
func (p probeResults) Ready(_ types.UID, _, id string) (bool, bool) {
	v, ok := p.ready[id]
	return v, ok
}

func TestConditionTransitionTimes(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	pod := makePod("p").containers("a").obj()
	scheduledAt := metav1.NewTime(t0.Add(-time.Hour))
	pod.Status.Conditions = []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: scheduledAt},
		{Type: "example.com/gate", Status: v1.ConditionFalse, LastTransitionTime: scheduledAt},
	}
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}

	first := GenerateAPIPodStatus(pod, runtimeOf(pod).obj(), false, nil, nodeIP, pod.Status, WithClock(clk))
	if c := cond(first, v1.PodScheduled); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Equal(&scheduledAt) {
		t.Fatalf("PodScheduled keeps its time: %+v", c)
	}
	if c := cond(first, "example.com/gate"); c == nil || !c.LastTransitionTime.Equal(&scheduledAt) {
		t.Fatalf("others' conditions are kept: %+v", first.Conditions)
	}
	if c := cond(first, v1.PodReady); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0) || c.Reason != ContainersNotReady || c.Message != "containers with unready status: [a]" {
		t.Fatalf("Ready = %+v", c)
	}
	if !first.StartTime.Time.Equal(t0) {
		t.Fatalf("the first sync sets the start time: %v", first.StartTime)
	}

	// Nothing changes: no time moves.
	clk.Step(time.Minute)
	second := GenerateAPIPodStatus(pod, runtimeOf(pod).obj(), false, nil, nodeIP, first, WithClock(clk))
	if c := cond(second, v1.PodReady); !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("Ready moved without a change: %+v", c)
	}
	if !second.StartTime.Time.Equal(t0) {
		t.Fatalf("the start time is kept")
	}

	// The container runs: ContainersReady turns True now, Ready waits for the gate.
	clk.Step(time.Minute)
	third := GenerateAPIPodStatus(pod, runtimeOf(pod).running("a").obj(), false, nil, nodeIP, second, WithClock(clk))
	if c := cond(third, v1.ContainersReady); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("ContainersReady = %+v", c)
	}
	c := cond(third, v1.PodReady)
	if c.Status != v1.ConditionFalse || c.Reason != ReadinessGatesNotReady ||
		c.Message != `the status of pod readiness gate "example.com/gate" is not "True", but False` || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("Ready = %+v", c)
	}

	pod.Status.Conditions[1].Status = v1.ConditionTrue
	fourth := GenerateAPIPodStatus(pod, runtimeOf(pod).running("a").obj(), false, nil, nodeIP, third, WithClock(clk))
	if c := cond(fourth, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready = %+v", c)
	}
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: "example.com/missing"})
	fifth := GenerateAPIPodStatus(pod, runtimeOf(pod).running("a").obj(), false, nil, nodeIP, fourth, WithClock(clk))
	if c := cond(fifth, v1.PodReady); c.Status != v1.ConditionFalse || c.Message != `corresponding condition of pod readiness gate "example.com/missing" does not exist.` {
		t.Fatalf("Ready = %+v", c)
	}
}

func TestDisruptionTargetFromOldStatus(t *testing.T) {
	pod := makePod("p").containers("a").obj()
	old := v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet"}}}
	s := GenerateAPIPodStatus(pod, runtimeOf(pod).running("a").obj(), false, nil, nodeIP, old)
	if c := cond(s, v1.DisruptionTarget); c == nil || c.Reason != "TerminationByKubelet" {
		t.Fatalf("DisruptionTarget = %+v", s.Conditions)
	}
}

func TestIPsAndMetadata(t *testing.T) {
	pod := makePod("p").containers("a").with(func(p *v1.Pod) {
		p.Generation = 3
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		}
	}).obj()
	rt := runtimeOf(pod).running("a")
	rt.s.IPs = []string{"fd00::5", "10.88.0.5", "10.88.0.6"}
	dual := []net.IP{net.ParseIP("192.0.2.10"), net.ParseIP("2001:db8::10")}
	s := GenerateAPIPodStatus(pod, rt.obj(), false, nil, dual, v1.PodStatus{})
	if s.PodIP != "10.88.0.5" || len(s.PodIPs) != 2 || s.PodIPs[1].IP != "fd00::5" {
		t.Fatalf("podIPs = %v %v", s.PodIP, s.PodIPs)
	}
	if s.HostIP != "192.0.2.10" || len(s.HostIPs) != 2 || s.HostIPs[1].IP != "2001:db8::10" {
		t.Fatalf("hostIPs = %v %v", s.HostIP, s.HostIPs)
	}
	if s.QOSClass != v1.PodQOSBurstable || s.ObservedGeneration != 3 {
		t.Fatalf("qos %s generation %d", s.QOSClass, s.ObservedGeneration)
	}
	if a := s.ContainerStatuses[0]; a.AllocatedResources.Cpu().MilliValue() != 100 || a.Resources == nil {
		t.Fatalf("resources = %+v %+v", a.AllocatedResources, a.Resources)
	}

	host := makePod("h").containers("a").with(func(p *v1.Pod) { p.Spec.HostNetwork = true }).obj()
	hrt := runtimeOf(host)
	hrt.s.IPs = nil
	hrt.s.SandboxStatuses[0].Network.Ip = ""
	hrt.s.SandboxStatuses[0].Linux.Namespaces.Options.Network = 2 // NODE
	s = GenerateAPIPodStatus(host, hrt.obj(), false, nil, dual, v1.PodStatus{})
	if s.PodIP != "192.0.2.10" || len(s.PodIPs) != 2 || s.PodIPs[1].IP != "2001:db8::10" {
		t.Fatalf("a host-network pod has the node's IPs: %v", s.PodIPs)
	}
	if c := cond(s, v1.PodReadyToStartContainers); c.Status != v1.ConditionTrue {
		t.Fatalf("PodReadyToStartContainers = %+v", c)
	}
}

func TestSandboxNotReadyMessages(t *testing.T) {
	pod := makePod("p").containers("a").obj()
	tests := []struct {
		name   string
		mutate func(*container.PodStatus)
		want   string
	}{
		{"no sandbox", func(s *container.PodStatus) { s.SandboxStatuses = nil }, msgNoPodSandbox},
		{"not ready", func(s *container.PodStatus) { s.SandboxStatuses[0].State = 1 }, msgSandboxNotReady},
		{"no ip", func(s *container.PodStatus) { s.SandboxStatuses[0].Network.Ip = "" }, msgNoIPAddress},
		{"two ready", func(s *container.PodStatus) { s.SandboxStatuses = append(s.SandboxStatuses, readySandbox("10.0.0.1")) }, msgMultipleSandboxes},
		{"namespace mode", func(s *container.PodStatus) { s.SandboxStatuses[0].Linux.Namespaces.Options.Network = 2 }, msgNetworkNamespaceMode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := runtimeOf(pod)
			tt.mutate(rt.s)
			s := GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, v1.PodStatus{})
			if c := cond(s, v1.PodReadyToStartContainers); c.Status != v1.ConditionFalse || c.Reason != PodSandboxNotReady || c.Message != tt.want {
				t.Fatalf("got %+v", c)
			}
		})
	}
}

func TestStableAcrossCalls(t *testing.T) {
	pod := makePod("p").init("i2", "i1").containers("z", "m", "a").with(func(p *v1.Pod) {
		p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	}).obj()
	rt := runtimeOf(pod).exited("i2", 0).exited("i1", 0).running("z").running("a").running("m").running("debug")
	clk := testingclock.NewFakeClock(t0)
	first := GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, v1.PodStatus{}, WithClock(clk))
	clk.Step(time.Hour)
	second := GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, first, WithClock(clk))
	if !apiequality.Semantic.DeepEqual(first, second) {
		t.Fatalf("a second generation from the same state differs:\n%+v\n%+v", first, second)
	}
	var names []string
	for _, l := range [][]v1.ContainerStatus{first.InitContainerStatuses, first.ContainerStatuses, first.EphemeralContainerStatuses} {
		for _, c := range l {
			names = append(names, c.Name)
		}
	}
	if got := strings.Join(names, ","); got != "i2,i1,a,m,z,debug" {
		t.Fatalf("order = %s", got)
	}
	if d := first.EphemeralContainerStatuses[0]; d.State.Running == nil || d.Started != nil {
		t.Fatalf("ephemeral = %+v", d)
	}
}

// During a resize a running container shows the resources it runs with and the allocated
// requests; one that does not run shows the allocated ones; the resize conditions come as
// given, and a stale one of the API's does not stay.
func TestResizeStatus(t *testing.T) {
	allocated := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("25m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("35m")},
	}
	running := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("20m")}}
	pod := makePod("p").containers("a", "b").with(func(p *v1.Pod) {
		p.Spec.Containers[0].Resources = allocated
		p.Spec.Containers[1].Resources = allocated
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred}}
	}).obj()
	rt := runtimeOf(pod).running("a").exited("b", 1)
	inProgress := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: 2,
		LastTransitionTime: metav1.NewTime(t0)}
	s := GenerateAPIPodStatus(pod, rt.obj(), false, NewReasonCache(), nodeIP, v1.PodStatus{},
		WithActuatedResources(func(name string) (v1.ResourceRequirements, bool) { return running, true }),
		WithResizeConditions([]v1.PodCondition{inProgress}))
	a, b := findCS(t, s.ContainerStatuses, "a"), findCS(t, s.ContainerStatuses, "b")
	if !apiequality.Semantic.DeepEqual(*a.Resources, running) || !apiequality.Semantic.DeepEqual(a.AllocatedResources, allocated.Requests) {
		t.Errorf("running a: resources %v, allocated %v", a.Resources, a.AllocatedResources)
	}
	if !apiequality.Semantic.DeepEqual(*b.Resources, allocated) {
		t.Errorf("exited b: resources %v", b.Resources)
	}
	if c := cond(s, v1.PodResizeInProgress); c == nil || c.ObservedGeneration != 2 || !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("PodResizeInProgress = %+v", c)
	}
	if c := cond(s, v1.PodResizePending); c != nil {
		t.Errorf("the API's stale PodResizePending stayed: %+v", c)
	}
}
