// Package nodename is the NodeName plugin, part of findNodesThatFitPod: a pod that names its
// node in spec.nodeName fits only that node.
package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodeName"
	// ErrReason is the Filter reason for any other node.
	ErrReason = "node(s) didn't match the requested node name"
)

// NodeName checks spec.nodeName against the node.
type NodeName struct{}

var (
	_ framework.PreFilterPlugin   = &NodeName{}
	_ framework.FilterPlugin      = &NodeName{}
	_ framework.EnqueueExtensions = &NodeName{}
)

// New returns the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &NodeName{}, nil
}

// Name returns Name.
func (pl *NodeName) Name() string { return Name }

// EventsToRegister: only a new node (the one named) can help; no hint needed, the retry is
// cheap.
func (pl *NodeName) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
	}, nil
}

// PreFilter narrows the search to the named node, so that the others are not even filtered
// (and are never candidates for preemption).
func (pl *NodeName) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	return &framework.PreFilterResult{NodeNames: sets.New(pod.Spec.NodeName)}, nil
}

// PreFilterExtensions returns nil: the state does not depend on other pods.
func (pl *NodeName) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter rejects every node but the named one; preemption cannot change a name.
func (pl *NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	if !Fits(pod, nodeInfo) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

// Fits reports whether the pod names no node or this one.
func Fits(pod *v1.Pod, nodeInfo *framework.NodeInfo) bool {
	return pod.Spec.NodeName == "" || pod.Spec.NodeName == nodeInfo.Node().Name
}
