package noderesources

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// BalancedAllocationName is the plugin's name in kube-scheduler's configuration.
const BalancedAllocationName = "NodeResourcesBalancedAllocation"

const balancedAllocationPreScoreStateKey framework.StateKey = "PreScore" + BalancedAllocationName

var (
	_ framework.PreScorePlugin = &BalancedAllocation{}
	_ framework.ScorePlugin    = &BalancedAllocation{}
)

// BalancedAllocation is the NodeResourcesBalancedAllocation plugin: it prefers nodes whose
// resources (cpu and memory by default) end up used in similar fractions, so that no node
// runs out of one while the others sit idle.
type BalancedAllocation struct {
	scorer *resourceAllocationScorer
}

// NewBalancedAllocation builds NodeResourcesBalancedAllocation from
// *configv1.NodeResourcesBalancedAllocationArgs, or nil for the defaults.
func NewBalancedAllocation(_ context.Context, obj runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	args, err := balancedAllocationArgs(obj)
	if err != nil {
		return nil, err
	}
	// Balance is about what pods really asked for, so real requests, not non-zero ones.
	return &BalancedAllocation{scorer: newScorer(balancedAllocation, args.Resources, true)}, nil
}

// Name returns BalancedAllocationName.
func (ba *BalancedAllocation) Name() string { return BalancedAllocationName }

// PreScore computes the pod's requests once per cycle. A pod that requests none of the
// resources cannot change any node's balance, so its Score is skipped.
func (ba *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	podRequests := ba.scorer.podRequests(pod)
	if isZero(podRequests) {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(balancedAllocationPreScoreStateKey, &scoreState{podRequests: podRequests})
	return nil
}

// Score rates the node 0..100: 50 when the pod leaves the node's balance as it was, more
// when it improves it.
func (ba *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var podRequests []int64
	if c, err := state.Read(balancedAllocationPreScoreStateKey); err == nil {
		if s, ok := c.(*scoreState); ok {
			podRequests = s.podRequests
		}
	}
	if podRequests == nil {
		podRequests = ba.scorer.podRequests(pod)
		if isZero(podRequests) {
			return 0, nil
		}
	}
	return ba.scorer.score(nodeInfo, podRequests), nil
}

// ScoreExtensions is nil: scores are already 0..100.
func (ba *BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }

func isZero(requests []int64) bool {
	for _, r := range requests {
		if r != 0 {
			return false
		}
	}
	return true
}
