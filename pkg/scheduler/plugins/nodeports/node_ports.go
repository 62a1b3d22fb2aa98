// Package nodeports is the NodePorts plugin, part of findNodesThatFitPod: a pod that binds
// host ports fits only nodes where no other pod holds them.
package nodeports

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/helper"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodePorts"
	// ErrReason is the Filter reason for a node where a wanted port is taken.
	ErrReason = "node(s) didn't have free ports for the requested pod ports"

	preFilterStateKey framework.StateKey = "PreFilter" + Name
)

// NodePorts checks the pod's host ports against those in use on the node.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin   = &NodePorts{}
	_ framework.FilterPlugin      = &NodePorts{}
	_ framework.EnqueueExtensions = &NodePorts{}
)

// New returns the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &NodePorts{}, nil
}

// Name returns Name.
func (pl *NodePorts) Name() string { return Name }

// preFilterState is the pod's host ports.
type preFilterState []v1.ContainerPort

// Clone shares the state: the pod's ports do not change when other pods come and go.
func (s preFilterState) Clone() framework.StateData { return s }

// HostPorts returns the host ports the pod binds: those of its containers and of its sidecars
// (init containers with restartPolicy Always, which run as long as the pod). Other init
// containers have finished before the pod's containers start, so their ports are not held.
func HostPorts(pod *v1.Pod) []v1.ContainerPort {
	var ports []v1.ContainerPort
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			continue
		}
		ports = appendHostPorts(ports, c.Ports)
	}
	for i := range pod.Spec.Containers {
		ports = appendHostPorts(ports, pod.Spec.Containers[i].Ports)
	}
	return ports
}

func appendHostPorts(dst, ports []v1.ContainerPort) []v1.ContainerPort {
	for _, p := range ports {
		if p.HostPort > 0 {
			dst = append(dst, p)
		}
	}
	return dst
}

// PreFilter collects the pod's host ports once; a pod without any skips Filter.
func (pl *NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	ports := HostPorts(pod)
	if len(ports) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, preFilterState(ports))
	return nil, nil
}

// PreFilterExtensions returns nil: the state does not depend on other pods (Filter reads the
// ports in use from the NodeInfo that preemption edits).
func (pl *NodePorts) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter rejects a node where one of the pod's host ports is taken. Preempting the pod that
// holds it frees it, hence Unschedulable.
func (pl *NodePorts) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err))
	}
	ports, ok := data.(preFilterState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("invalid PreFilter state, got type %T", data))
	}
	if !fitsPorts(ports, nodeInfo.UsedPorts) {
		return framework.NewStatus(framework.Unschedulable, ErrReason)
	}
	return nil
}

// Fits reports whether none of the pod's host ports is taken on the node.
func Fits(pod *v1.Pod, nodeInfo *framework.NodeInfo) bool {
	return fitsPorts(HostPorts(pod), nodeInfo.UsedPorts)
}

func fitsPorts(want []v1.ContainerPort, inUse framework.HostPortInfo) bool {
	for i := range want {
		if inUse.CheckConflict(want[i].HostIP, string(want[i].Protocol), want[i].HostPort) {
			return false
		}
	}
	return true
}

// EventsToRegister: a bound pod going away frees its ports; a new node has all free. Ports
// of a pod cannot change, so pod updates are not registered.
func (pl *NodePorts) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, QueueingHintFn: isSchedulableAfterAssignedPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
	}, nil
}

// isSchedulableAfterAssignedPodDeleted queues the pod when the deleted pod was on a node (or
// nominated to one) and held one of the ports the pod wants.
func isSchedulableAfterAssignedPodDeleted(_ klog.Logger, pod *v1.Pod, oldObj, _ interface{}) (framework.QueueingHint, error) {
	deleted, _, err := helper.As[*v1.Pod](oldObj, nil)
	if err != nil {
		return framework.Queue, err
	}
	if deleted == nil || (deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "") {
		return framework.QueueSkip, nil
	}
	freed := HostPorts(deleted)
	if len(freed) == 0 {
		return framework.QueueSkip, nil
	}
	inUse := make(framework.HostPortInfo, len(freed))
	for _, p := range freed {
		inUse.Add(p.HostIP, string(p.Protocol), p.HostPort)
	}
	if fitsPorts(HostPorts(pod), inUse) {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
