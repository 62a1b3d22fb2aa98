package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func gated(gates ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: v1.PodConditionType(g)})
		}
	}
}

func podCond(t string, s v1.ConditionStatus) v1.PodCondition {
	return v1.PodCondition{Type: v1.PodConditionType(t), Status: s}
}

func readyStatus(name string, ready bool) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Ready: ready}
}

func TestPodReadyConditionWithReadinessGates(t *testing.T) {
	const g1, g2 = "k8s.io/test-condition1", "k8s.io/test-condition2"
	pod := makePod("p").containers("app").sidecar("side").with(gated(g1, g2)).obj()
	allReady := []v1.ContainerStatus{readyStatus("side", true), readyStatus("app", true)}
	for _, tc := range []struct {
		name        string
		conditions  []v1.PodCondition
		statuses    []v1.ContainerStatus
		wantStatus  v1.ConditionStatus
		wantReason  string
		wantMessage string
	}{{
		name:        "no gate condition yet",
		statuses:    allReady,
		wantStatus:  v1.ConditionFalse,
		wantReason:  ReadinessGatesNotReady,
		wantMessage: `corresponding condition of pod readiness gate "k8s.io/test-condition1" does not exist., corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`,
	}, {
		name:        "one gate True, the other False",
		conditions:  []v1.PodCondition{podCond(g1, v1.ConditionTrue), podCond(g2, v1.ConditionFalse)},
		statuses:    allReady,
		wantStatus:  v1.ConditionFalse,
		wantReason:  ReadinessGatesNotReady,
		wantMessage: `the status of pod readiness gate "k8s.io/test-condition2" is not "True", but False`,
	}, {
		name:       "every gate True and every container ready",
		conditions: []v1.PodCondition{podCond(g1, v1.ConditionTrue), podCond(g2, v1.ConditionTrue)},
		statuses:   allReady,
		wantStatus: v1.ConditionTrue,
	}, {
		name:        "every gate True, the sidecar not ready",
		conditions:  []v1.PodCondition{podCond(g1, v1.ConditionTrue), podCond(g2, v1.ConditionTrue)},
		statuses:    []v1.ContainerStatus{readyStatus("side", false), readyStatus("app", true)},
		wantStatus:  v1.ConditionFalse,
		wantReason:  ContainersNotReady,
		wantMessage: "containers with unready status: [side]",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := GeneratePodReadyCondition(pod, tc.conditions, tc.statuses, v1.PodRunning)
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Message != tc.wantMessage {
				t.Errorf("Ready = %s %q %q, want %s %q %q", got.Status, got.Reason, got.Message, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

func TestNeedToReconcilePodReadiness(t *testing.T) {
	const g = "example.com/gate"
	withStatus := func(p *v1.Pod, conditions ...v1.PodCondition) *v1.Pod {
		p = p.DeepCopy()
		p.Status = v1.PodStatus{Phase: v1.PodRunning, Conditions: conditions,
			InitContainerStatuses: []v1.ContainerStatus{readyStatus("side", true)},
			ContainerStatuses:     []v1.ContainerStatus{readyStatus("app", true)}}
		return p
	}
	gatedPod := makePod("p").containers("app").sidecar("side").with(gated(g)).obj()
	notReadyGate := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReadinessGatesNotReady,
		Message: `corresponding condition of pod readiness gate "example.com/gate" does not exist.`}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"no readiness gates", withStatus(makePod("p").containers("app").sidecar("side").obj(), podCond("Ready", v1.ConditionFalse)), false},
		{"no Ready condition yet: the first sync writes it", withStatus(gatedPod, podCond(g, v1.ConditionTrue)), false},
		{"Ready says what the gate makes it", withStatus(gatedPod, notReadyGate), false},
		{"the gate turned True", withStatus(gatedPod, notReadyGate, podCond(g, v1.ConditionTrue)), true},
		{"the gate turned False under a Ready pod", withStatus(gatedPod, podCond("Ready", v1.ConditionTrue), podCond(g, v1.ConditionFalse)), true},
		{"Ready and its gate True (the sidecar counts as ready)", withStatus(gatedPod, podCond("Ready", v1.ConditionTrue), podCond(g, v1.ConditionTrue)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedToReconcilePodReadiness(tc.pod); got != tc.want {
				t.Errorf("NeedToReconcilePodReadiness = %t, want %t", got, tc.want)
			}
		})
	}
}
