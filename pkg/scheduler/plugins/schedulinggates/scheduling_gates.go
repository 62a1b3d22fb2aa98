// Package schedulinggates is the SchedulingGates plugin, the PreEnqueue step: a pod whose
// spec.schedulingGates is not empty stays out of activeQ, so scheduleOne never sees it, until
// an update removes the last gate.
package schedulinggates

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "SchedulingGates"

// SchedulingGates holds back pods that carry scheduling gates.
type SchedulingGates struct{}

var (
	_ framework.PreEnqueuePlugin  = &SchedulingGates{}
	_ framework.EnqueueExtensions = &SchedulingGates{}
)

// New returns the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &SchedulingGates{}, nil
}

// Name returns Name.
func (pl *SchedulingGates) Name() string { return Name }

// PreEnqueue rejects a gated pod with the names of its gates, e.g.
// "waiting for scheduling gates: [example.com/a example.com/b]".
func (pl *SchedulingGates) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	if len(pod.Spec.SchedulingGates) == 0 {
		return nil
	}
	gates := make([]string, len(pod.Spec.SchedulingGates))
	for i, g := range pod.Spec.SchedulingGates {
		gates[i] = g.Name
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for scheduling gates: %v", gates))
}

// EventsToRegister: only the removal of the pod's own gates can let it in. Gates can only be
// removed, never added back, so the event alone is enough (the hint always queues).
func (pl *SchedulingGates) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{{
		Event:          framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.UpdatePodSchedulingGatesEliminated},
		QueueingHintFn: isSchedulableAfterGatesEliminated,
	}}, nil
}

// isSchedulableAfterGatesEliminated queues the pod when the event is about the pod itself.
// (kube-scheduler registers this for TargetPod, a resource berth's framework does not have,
// so the pod's identity is checked here.)
func isSchedulableAfterGatesEliminated(_ klog.Logger, pod *v1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
	if updated, ok := newObj.(*v1.Pod); ok && updated.UID != pod.UID {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
