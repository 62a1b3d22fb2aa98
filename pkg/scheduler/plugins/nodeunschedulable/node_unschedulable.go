// Package nodeunschedulable is the NodeUnschedulable plugin, part of findNodesThatFitPod: a
// cordoned node (spec.unschedulable) takes only pods that tolerate the
// node.kubernetes.io/unschedulable:NoSchedule taint.
package nodeunschedulable

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/helper"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodeUnschedulable"
	// ErrReasonUnschedulable is the Filter reason for a cordoned node.
	ErrReasonUnschedulable = "node(s) were unschedulable"
)

// unschedulableTaint is the taint the node lifecycle controller puts on cordoned nodes; a pod
// that tolerates it tolerates spec.unschedulable too.
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// NodeUnschedulable filters out cordoned nodes.
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = &NodeUnschedulable{}
	_ framework.EnqueueExtensions = &NodeUnschedulable{}
)

// New returns the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &NodeUnschedulable{}, nil
}

// Name returns Name.
func (pl *NodeUnschedulable) Name() string { return Name }

// Filter rejects a cordoned node unless the pod tolerates the unschedulable taint. Preempting
// pods does not uncordon a node, hence UnschedulableAndUnresolvable.
func (pl *NodeUnschedulable) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	if !nodeInfo.Node().Spec.Unschedulable {
		return nil
	}
	if helper.TolerationsTolerateTaint(klog.FromContext(ctx), pod.Spec.Tolerations, &unschedulableTaint) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}

// EventsToRegister: a node that appears or is uncordoned (the event classifier reports a
// spec.unschedulable change as UpdateNodeTaint, as kube-scheduler does), or the pod gaining
// the toleration.
func (pl *NodeUnschedulable) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint}, QueueingHintFn: isSchedulableAfterNodeChange},
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.UpdatePodToleration}, QueueingHintFn: isSchedulableAfterPodTolerationChange},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod for a new schedulable node or a node that was
// uncordoned.
func isSchedulableAfterNodeChange(_ klog.Logger, _ *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil || newNode.Spec.Unschedulable {
		return framework.QueueSkip, nil
	}
	if oldNode == nil || oldNode.Spec.Unschedulable {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// isSchedulableAfterPodTolerationChange queues the pod when it now tolerates the
// unschedulable taint. It did not before, or this plugin would not have rejected it.
// (kube-scheduler registers this for TargetPod, a resource berth's framework does not have,
// so the pod's identity is checked here.)
func isSchedulableAfterPodTolerationChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, updated, err := helper.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if updated == nil || updated.UID != pod.UID {
		return framework.QueueSkip, nil
	}
	if helper.TolerationsTolerateTaint(logger, updated.Spec.Tolerations, &unschedulableTaint) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}
