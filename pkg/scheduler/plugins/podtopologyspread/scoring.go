package podtopologyspread

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

const preScoreStateKey framework.StateKey = "PreScore" + Name

// invalidScore marks, between Score and NormalizeScore, a node that is not scored.
const invalidScore = -1

// preScoreState is what PreScore counts for Score: per ScheduleAnyway constraint, the
// matching pods in each domain of the candidate nodes, and how much a pod there weighs.
type preScoreState struct {
	constraints []constraint
	// ignoredNodes lack a topology key the constraints need; they score 0.
	ignoredNodes sets.Set[string]
	// counts[i] maps the domains of constraint i that hold a candidate node to their matching
	// pods. It is nil for hostname constraints: Score counts the node's own pods instead.
	counts []map[string]int64
	// weights[i] is log(number of candidate domains + 2): a pod in a small topology (few
	// zones) counts for less than one in a large one (many hosts), so neither drowns the other.
	weights []float64
}

// Clone shares the state: nothing changes it after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore counts, for each ScheduleAnyway constraint (or default constraint), the matching
// pods in the domains of the candidate nodes, over all nodes that count for the constraint.
func (pl *Plugin) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, filteredNodes []*framework.NodeInfo) *framework.Status {
	allNodes, err := pl.sharedLister.NodeInfos().List()
	if err != nil {
		return framework.AsStatus(fmt.Errorf("getting all nodes: %w", err))
	}
	if len(allNodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	cs, err := pl.constraints(pod, v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("calculating preScoreState: %w", err))
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	// The system defaults spread over hostname and zone; nodes without a zone label still
	// spread by hostname. Other constraints need every key.
	requireAllTopologies := len(pod.Spec.TopologySpreadConstraints) > 0 || !pl.systemDefaulted
	s := newPreScoreState(cs, filteredNodes, requireAllTopologies)

	logger := klog.FromContext(ctx)
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	nc := len(cs)
	perNode := make([]domainCount, len(allNodes)*nc)
	entries, release := pl.counts.acquireCounts(pod.Namespace, cs, len(allNodes))
	defer release()
	until(ctx, pl.parallelizer, len(allNodes), func(n int) {
		row := perNode[n*nc : (n+1)*nc]
		node := allNodes[n].Node()
		if node == nil || (requireAllTopologies && !hasAllTopologyKeys(node.Labels, cs)) {
			return
		}
		for i := range cs {
			if s.counts[i] == nil || !cs[i].includesNode(logger, pod, node, affinity) {
				continue
			}
			// Only domains that hold a candidate node matter.
			value := node.Labels[cs[i].TopologyKey]
			if _, ok := s.counts[i][value]; ok {
				row[i] = domainCount{value, countOn(entries[i], n, allNodes[n], cs[i].Selector, pod.Namespace)}
			}
		}
	})
	for j, dc := range perNode {
		if dc.count > 0 {
			s.counts[j%nc][dc.value] += int64(dc.count)
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// newPreScoreState finds the candidate nodes to ignore, the candidate domains and the weights.
func newPreScoreState(cs []constraint, filteredNodes []*framework.NodeInfo, requireAllTopologies bool) *preScoreState {
	s := &preScoreState{
		constraints:  cs,
		ignoredNodes: sets.New[string](),
		counts:       make([]map[string]int64, len(cs)),
		weights:      make([]float64, len(cs)),
	}
	for i := range cs {
		if cs[i].TopologyKey != v1.LabelHostname {
			s.counts[i] = map[string]int64{}
		}
	}
	for _, ni := range filteredNodes {
		node := ni.Node()
		if requireAllTopologies && !hasAllTopologyKeys(node.Labels, cs) {
			s.ignoredNodes.Insert(node.Name)
			continue
		}
		for i := range cs {
			if s.counts[i] != nil {
				// A node without the key (allowed for system defaults) adds the domain "".
				s.counts[i][node.Labels[cs[i].TopologyKey]] += 0
			}
		}
	}
	for i := range cs {
		size := len(s.counts[i])
		if cs[i].TopologyKey == v1.LabelHostname {
			size = len(filteredNodes) - len(s.ignoredNodes)
		}
		s.weights[i] = math.Log(float64(size + 2))
	}
	return s
}

// Score is the node's weighted count of matching pods across its domains; NormalizeScore
// turns fewer into better.
func (pl *Plugin) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	s, err := getPreScoreState(state)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	node := nodeInfo.Node()
	if s.ignoredNodes.Has(node.Name) {
		return 0, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		value, ok := node.Labels[c.TopologyKey]
		if !ok {
			continue
		}
		var count int64
		if s.counts[i] == nil {
			count = int64(countMatching(nodeInfo.Pods, c.Selector, pod.Namespace))
		} else {
			count = s.counts[i][value]
		}
		// maxSkew-1 is added so that small differences between domains matter less.
		score += float64(count)*s.weights[i] + float64(c.MaxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions returns the plugin for NormalizeScore.
func (pl *Plugin) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the lowest count to MaxNodeScore and scales the rest by
// (max + min - score) / max; ignored nodes score 0.
func (pl *Plugin) NormalizeScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s, err := getPreScoreState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for i := range scores {
		if s.ignoredNodes.Has(scores[i].Name) {
			scores[i].Score = invalidScore
			continue
		}
		minScore = min(minScore, scores[i].Score)
		maxScore = max(maxScore, scores[i].Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score == invalidScore:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}

func getPreScoreState(state *framework.CycleState) (*preScoreState, error) {
	d, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, fmt.Errorf("error reading %q from cycleState: %w", preScoreStateKey, err)
	}
	s, ok := d.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to podtopologyspread.preScoreState error", d)
	}
	return s, nil
}
