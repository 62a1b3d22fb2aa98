package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/types"
)

func running(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, Started: ptr.To(true)}
}

func runningNotStarted(name string) v1.ContainerStatus {
	s := running(name)
	s.Started = ptr.To(false)
	return s
}

func terminated(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func waiting(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}
}

// restarting: waiting again after exiting with code (crash loop back-off).
func restarting(name string, code int32) v1.ContainerStatus {
	s := waiting(name)
	s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: code}
	return s
}

func TestPodPhase(t *testing.T) {
	always, onFailure, never := v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever
	plain := func(p v1.RestartPolicy) *v1.Pod { return makePod("p").containers("a", "b").restart(p).obj() }
	withInit := func(p v1.RestartPolicy) *v1.Pod { return makePod("p").init("i").containers("a").restart(p).obj() }
	withSidecar := func(p v1.RestartPolicy) *v1.Pod { return makePod("p").sidecar("s").containers("a").restart(p).obj() }
	static := makePod("p").containers("a").restart(never).with(func(p *v1.Pod) {
		p.Annotations = map[string]string{types.ConfigSourceAnnotationKey: types.FileSource}
	}).obj()

	tests := []struct {
		name        string
		pod         *v1.Pod
		statuses    []v1.ContainerStatus
		terminal    bool
		initialized bool
		want        v1.PodPhase
	}{
		{"nothing known", plain(always), nil, false, false, v1.PodPending},
		{"one waiting", plain(always), []v1.ContainerStatus{running("a"), waiting("b")}, false, false, v1.PodPending},
		{"one unknown", plain(always), []v1.ContainerStatus{running("a")}, false, false, v1.PodPending},
		{"all running", plain(always), []v1.ContainerStatus{running("a"), running("b")}, false, false, v1.PodRunning},
		{"running and done", plain(never), []v1.ContainerStatus{running("a"), terminated("b", 0)}, false, false, v1.PodRunning},

		{"Always: all exited 0 restart", plain(always), []v1.ContainerStatus{terminated("a", 0), terminated("b", 0)}, false, false, v1.PodRunning},
		{"Always: crash loop", plain(always), []v1.ContainerStatus{restarting("a", 1), running("b")}, false, false, v1.PodRunning},
		{"Always: all in back-off", plain(always), []v1.ContainerStatus{restarting("a", 1), restarting("b", 2)}, false, false, v1.PodRunning},
		{"Always: terminal, all 0", plain(always), []v1.ContainerStatus{terminated("a", 0), terminated("b", 0)}, true, false, v1.PodSucceeded},
		{"Always: terminal, one failed", plain(always), []v1.ContainerStatus{terminated("a", 0), terminated("b", 137)}, true, false, v1.PodFailed},

		{"OnFailure: all 0", plain(onFailure), []v1.ContainerStatus{terminated("a", 0), terminated("b", 0)}, false, false, v1.PodSucceeded},
		{"OnFailure: one failed restarts", plain(onFailure), []v1.ContainerStatus{terminated("a", 0), terminated("b", 1)}, false, false, v1.PodRunning},
		{"OnFailure: back-off after failure", plain(onFailure), []v1.ContainerStatus{terminated("a", 0), restarting("b", 1)}, false, false, v1.PodRunning},
		{"OnFailure: terminal failure", plain(onFailure), []v1.ContainerStatus{terminated("a", 0), terminated("b", 1)}, true, false, v1.PodFailed},

		{"Never: all 0", plain(never), []v1.ContainerStatus{terminated("a", 0), terminated("b", 0)}, false, false, v1.PodSucceeded},
		{"Never: one failed", plain(never), []v1.ContainerStatus{terminated("a", 0), terminated("b", 1)}, false, false, v1.PodFailed},

		{"init: not started", withInit(always), []v1.ContainerStatus{waiting("i"), waiting("a")}, false, false, v1.PodPending},
		{"init: running", withInit(always), []v1.ContainerStatus{running("i"), waiting("a")}, false, false, v1.PodPending},
		{"init: done, app waiting", withInit(always), []v1.ContainerStatus{terminated("i", 0), waiting("a")}, false, false, v1.PodPending},
		{"init: done, app running", withInit(always), []v1.ContainerStatus{terminated("i", 0), running("a")}, false, true, v1.PodRunning},
		{"init: failed, Never", withInit(never), []v1.ContainerStatus{terminated("i", 1), waiting("a")}, false, false, v1.PodFailed},
		{"init: failed, OnFailure retries", withInit(onFailure), []v1.ContainerStatus{terminated("i", 1), waiting("a")}, false, false, v1.PodPending},
		{"init: failed, Always retries", withInit(always), []v1.ContainerStatus{restarting("i", 1), waiting("a")}, false, false, v1.PodPending},
		{"init: in back-off, Never", withInit(never), []v1.ContainerStatus{restarting("i", 1), waiting("a")}, false, false, v1.PodFailed},

		{"sidecar: waiting", withSidecar(always), []v1.ContainerStatus{waiting("s"), waiting("a")}, false, false, v1.PodPending},
		{"sidecar: not started yet", withSidecar(always), []v1.ContainerStatus{runningNotStarted("s"), waiting("a")}, false, false, v1.PodPending},
		{"sidecar: started, app running", withSidecar(never), []v1.ContainerStatus{running("s"), running("a")}, false, true, v1.PodRunning},
		{"sidecar: restarting after init", withSidecar(never), []v1.ContainerStatus{runningNotStarted("s"), running("a")}, false, true, v1.PodRunning},
		{"sidecar: app done, sidecar running", withSidecar(never), []v1.ContainerStatus{running("s"), terminated("a", 0)}, false, true, v1.PodRunning},
		{"sidecar: app done, sidecar stopped", withSidecar(never), []v1.ContainerStatus{terminated("s", 143), terminated("a", 0)}, false, true, v1.PodSucceeded},
		{"sidecar: app failed, sidecar stopped", withSidecar(never), []v1.ContainerStatus{terminated("s", 0), terminated("a", 2)}, true, true, v1.PodFailed},

		{"static pod: terminal keeps policy", static, []v1.ContainerStatus{terminated("a", 1)}, true, false, v1.PodFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podPhase(tt.pod, tt.statuses, tt.terminal, tt.initialized); got != tt.want {
				t.Fatalf("phase = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestContainerRestartRules(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	pod := makePod("p").containers("a").restart(v1.RestartPolicyNever).with(func(p *v1.Pod) {
		p.Spec.Containers[0].RestartPolicy = &never
		p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{
			Action:    v1.ContainerRestartRuleActionRestart,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
		}}
	}).obj()
	if got := podPhase(pod, []v1.ContainerStatus{terminated("a", 42)}, false, true); got != v1.PodRunning {
		t.Fatalf("exit 42 restarts: %s", got)
	}
	if got := podPhase(pod, []v1.ContainerStatus{terminated("a", 1)}, false, true); got != v1.PodFailed {
		t.Fatalf("exit 1 does not: %s", got)
	}
}

func TestTerminalPhaseIsKept(t *testing.T) {
	pod := makePod("p").containers("a").restart(v1.RestartPolicyAlways).obj()
	rt := runtimeOf(pod).running("a")
	for _, old := range []v1.PodPhase{v1.PodFailed, v1.PodSucceeded} {
		s := GenerateAPIPodStatus(pod, rt.obj(), false, nil, nodeIP, v1.PodStatus{Phase: old, Reason: "Evicted", Message: "m"})
		if s.Phase != old || s.Reason != "Evicted" || s.Message != "m" {
			t.Fatalf("old %s: got %s %q %q", old, s.Phase, s.Reason, s.Message)
		}
		api := pod.DeepCopy()
		api.Status.Phase = old
		s = GenerateAPIPodStatus(api, rt.obj(), false, nil, nodeIP, v1.PodStatus{Phase: v1.PodRunning})
		if s.Phase != old {
			t.Fatalf("API %s: got %s", old, s.Phase)
		}
		if c := cond(s, v1.PodReady); c.Status != v1.ConditionFalse || (c.Reason != PodFailed && c.Reason != PodCompleted) {
			t.Fatalf("a terminal pod is not ready: %+v", c)
		}
	}
}

func TestTerminalPodThroughGenerate(t *testing.T) {
	pod := makePod("p").init("i").containers("a").restart(v1.RestartPolicyOnFailure).obj()
	rt := runtimeOf(pod).exited("i", 0).exited("a", 0)
	s := GenerateAPIPodStatus(pod, rt.obj(), true, nil, nodeIP, v1.PodStatus{})
	if s.Phase != v1.PodSucceeded {
		t.Fatalf("phase = %s", s.Phase)
	}
	for _, ct := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
		if c := cond(s, ct); c.Status != v1.ConditionFalse || c.Reason != PodCompleted {
			t.Fatalf("%s = %+v", ct, c)
		}
	}
	if c := cond(s, v1.PodInitialized); c.Status != v1.ConditionTrue || c.Reason != PodCompleted {
		t.Fatalf("Initialized = %+v", c)
	}
}
