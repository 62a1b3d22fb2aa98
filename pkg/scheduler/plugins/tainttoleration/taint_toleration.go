// Package tainttoleration is the TaintToleration plugin. In findNodesThatFitPod its Filter
// keeps a pod off nodes with NoSchedule/NoExecute taints it does not tolerate; in
// prioritizeNodes its Score prefers nodes with fewer PreferNoSchedule taints it does not
// tolerate.
package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/helper"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "TaintToleration"

const preScoreStateKey framework.StateKey = "PreScore" + Name

// TaintToleration matches a pod's tolerations against a node's taints.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin      = &TaintToleration{}
	_ framework.PreScorePlugin    = &TaintToleration{}
	_ framework.ScorePlugin       = &TaintToleration{}
	_ framework.ScoreExtensions   = &TaintToleration{}
	_ framework.EnqueueExtensions = &TaintToleration{}
)

// New returns the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &TaintToleration{}, nil
}

// Name returns Name.
func (pl *TaintToleration) Name() string { return Name }

// ErrReason is the Filter reason for a node with an untolerated taint, naming the first one:
// "node(s) had untolerated taint {node.kubernetes.io/not-ready: }".
func ErrReason(taint v1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
}

// Filter rejects a node with a NoSchedule or NoExecute taint the pod does not tolerate.
// Evicting pods removes no taint, hence UnschedulableAndUnresolvable.
func (pl *TaintToleration) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	taint, untolerated := helper.FindMatchingUntoleratedTaint(klog.FromContext(ctx), nodeInfo.Node().Spec.Taints, pod.Spec.Tolerations, helper.DoNotScheduleTaintsFilterFunc())
	if !untolerated {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason(taint))
}

// preScoreState is the pod's tolerations that can tolerate a PreferNoSchedule taint.
type preScoreState struct {
	tolerations []v1.Toleration
}

// Clone shares the state: it does not depend on other pods.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore keeps the tolerations that Score needs: those for PreferNoSchedule or for every
// effect.
func (pl *TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	s := &preScoreState{}
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			s.tolerations = append(s.tolerations, t)
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod does not tolerate; NormalizeScore
// turns "fewer" into "better".
func (pl *TaintToleration) Score(ctx context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreStateKey, err))
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("invalid PreScore state, got type %T", data))
	}
	logger := klog.FromContext(ctx)
	taints := nodeInfo.Node().Spec.Taints
	var count int64
	for i := range taints {
		if taints[i].Effect == v1.TaintEffectPreferNoSchedule && !helper.TolerationsTolerateTaint(logger, s.tolerations, &taints[i]) {
			count++
		}
	}
	return count, nil
}

// ScoreExtensions returns the plugin, which normalizes its scores.
func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the counts to 0..100, reversed: no intolerable taint scores 100, the
// most intolerable taints 0.
func (pl *TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return helper.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}

// EventsToRegister: a node that appears or loses a taint, or the pod gaining a toleration.
func (pl *TaintToleration) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint}, QueueingHintFn: isSchedulableAfterNodeChange},
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.UpdatePodToleration}, QueueingHintFn: isSchedulableAfterPodTolerationChange},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod when the node has no untolerated hard taint now
// but had one before (a new node counts as having had one).
func isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.QueueSkip, nil
	}
	filter := helper.DoNotScheduleTaintsFilterFunc()
	if _, untolerated := helper.FindMatchingUntoleratedTaint(logger, newNode.Spec.Taints, pod.Spec.Tolerations, filter); untolerated {
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		return framework.Queue, nil
	}
	if _, wasUntolerated := helper.FindMatchingUntoleratedTaint(logger, oldNode.Spec.Taints, pod.Spec.Tolerations, filter); wasUntolerated {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// isSchedulableAfterPodTolerationChange queues the pod when its own tolerations changed (they
// can only be added to). kube-scheduler registers this for TargetPod, a resource berth's
// framework does not have, so the pod's identity is checked here.
func isSchedulableAfterPodTolerationChange(_ klog.Logger, pod *v1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
	if updated, ok := newObj.(*v1.Pod); ok && updated.UID != pod.UID {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
