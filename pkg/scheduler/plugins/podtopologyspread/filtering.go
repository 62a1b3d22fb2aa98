package podtopologyspread

import (
	"context"
	"fmt"
	"maps"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

const preFilterStateKey framework.StateKey = "PreFilter" + Name

// preFilterState is what PreFilter counts for Filter: per DoNotSchedule constraint, the
// matching pods in each eligible domain, and the two least loaded domains.
type preFilterState struct {
	constraints []constraint
	// selfMatch[i] says whether the incoming pod is one that constraint i selects.
	selfMatch []bool
	// counts[i] maps each eligible domain (topology value) of constraint i to its matching
	// pods; a domain with eligible nodes and no matching pod is present with 0.
	counts []map[string]int
	// paths[i] are the domains with the least matching pods for constraint i.
	paths []criticalPaths
}

// Clone copies the counts; preemption changes them on its copy.
func (s *preFilterState) Clone() framework.StateData {
	if s == nil {
		return nil
	}
	out := &preFilterState{
		constraints: s.constraints,
		selfMatch:   s.selfMatch,
		counts:      make([]map[string]int, len(s.counts)),
		paths:       append([]criticalPaths(nil), s.paths...),
	}
	for i, m := range s.counts {
		out.counts[i] = maps.Clone(m)
	}
	return out
}

// minMatchNum is the global minimum a skew is measured from: the least loaded domain, or 0
// while there are fewer eligible domains than minDomains.
func (s *preFilterState) minMatchNum(i int) int {
	if len(s.counts[i]) < int(s.constraints[i].MinDomains) {
		return 0
	}
	return s.paths[i][0].MatchNum
}

// criticalPaths are the two domains with the fewest matching pods, the fewest first. Two are
// enough for preemption, which removes pods from one node at a time on its own copy of the
// state: when the least loaded domain grows, the second takes its place.
type criticalPaths [2]struct {
	TopologyValue string
	MatchNum      int
}

func newCriticalPaths() criticalPaths {
	var p criticalPaths
	p[0].MatchNum, p[1].MatchNum = math.MaxInt32, math.MaxInt32
	return p
}

// update records that domain value now has num matching pods.
func (p *criticalPaths) update(value string, num int) {
	switch value {
	case p[0].TopologyValue:
		p[0].MatchNum = num
	case p[1].TopologyValue:
		p[1].MatchNum = num
	default:
		if num < p[0].MatchNum {
			p[1] = p[0]
			p[0].TopologyValue, p[0].MatchNum = value, num
		} else if num < p[1].MatchNum {
			p[1].TopologyValue, p[1].MatchNum = value, num
		}
		return
	}
	if p[0].MatchNum > p[1].MatchNum {
		p[0], p[1] = p[1], p[0]
	}
}

// PreFilter counts, for each DoNotSchedule constraint, the pods it selects in each domain of
// the nodes that count: those with all the constraints' topology keys that pass the
// constraint's node inclusion policies. Skip when the pod has no such constraint.
func (pl *Plugin) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	s, err := pl.calPreFilterState(ctx, pod, nodes)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if len(s.constraints) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, s)
	return nil, nil
}

func (pl *Plugin) calPreFilterState(ctx context.Context, pod *v1.Pod, nodes []*framework.NodeInfo) (*preFilterState, error) {
	cs, err := pl.constraints(pod, v1.DoNotSchedule)
	if err != nil {
		return nil, fmt.Errorf("get constraints from pod: %w", err)
	}
	if len(cs) == 0 {
		return &preFilterState{}, nil
	}
	logger := klog.FromContext(ctx)
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	nc := len(cs)
	// perNode[n*nc+i] is node n's domain and count for constraint i; count -1 when the node
	// does not count.
	perNode := make([]domainCount, len(nodes)*nc)
	entries, release := pl.counts.acquireCounts(pod.Namespace, cs, len(nodes))
	defer release()
	until(ctx, pl.parallelizer, len(nodes), func(n int) {
		row := perNode[n*nc : (n+1)*nc]
		for i := range row {
			row[i].count = -1
		}
		node := nodes[n].Node()
		if node == nil || !hasAllTopologyKeys(node.Labels, cs) {
			return
		}
		for i := range cs {
			if cs[i].includesNode(logger, pod, node, affinity) {
				row[i] = domainCount{node.Labels[cs[i].TopologyKey], countOn(entries[i], n, nodes[n], cs[i].Selector, pod.Namespace)}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		// Pieces may have been left out: the rows are not all filled in.
		return nil, err
	}

	s := &preFilterState{
		constraints: cs,
		selfMatch:   make([]bool, nc),
		counts:      make([]map[string]int, nc),
		paths:       make([]criticalPaths, nc),
	}
	for i := range cs {
		size := 0
		if cs[i].TopologyKey == v1.LabelHostname {
			size = len(nodes)
		}
		s.counts[i] = make(map[string]int, size)
		s.selfMatch[i] = cs[i].Selector.Matches(labels.Set(pod.Labels))
	}
	for j, dc := range perNode {
		if dc.count >= 0 {
			s.counts[j%nc][dc.value] += dc.count
		}
	}
	for i := range cs {
		s.paths[i] = newCriticalPaths()
		for value, num := range s.counts[i] {
			s.paths[i].update(value, num)
		}
	}
	return s, nil
}

// domainCount is a node's domain (topology value) and its matching pods, for one constraint.
type domainCount struct {
	value string
	count int
}

// PreFilterExtensions returns the plugin: preemption and nominated pods change the counts.
func (pl *Plugin) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod counts a pod added to nodeInfo's node.
func (pl *Plugin) AddPod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, podInfoToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(klog.FromContext(ctx), podInfoToAdd.Pod, podToSchedule, nodeInfo.Node(), 1)
	return nil
}

// RemovePod stops counting a pod removed from nodeInfo's node.
func (pl *Plugin) RemovePod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, podInfoToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(klog.FromContext(ctx), podInfoToRemove.Pod, podToSchedule, nodeInfo.Node(), -1)
	return nil
}

// updateWithPod adds delta to the domains of node for each constraint that selects pod, with
// the same rules as PreFilter's counting.
func (s *preFilterState) updateWithPod(logger klog.Logger, pod, preemptor *v1.Pod, node *v1.Node, delta int) {
	if s == nil || node == nil || pod.Namespace != preemptor.Namespace || pod.DeletionTimestamp != nil {
		return
	}
	if !hasAllTopologyKeys(node.Labels, s.constraints) {
		return
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(preemptor)
	for i := range s.constraints {
		c := &s.constraints[i]
		if c.Selector.Empty() || !c.Selector.Matches(labels.Set(pod.Labels)) || !c.includesNode(logger, preemptor, node, affinity) {
			continue
		}
		v := node.Labels[c.TopologyKey]
		s.counts[i][v] += delta
		s.paths[i].update(v, s.counts[i][v])
	}
}

func getPreFilterState(state *framework.CycleState) (*preFilterState, error) {
	d, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to podtopologyspread.preFilterState error", d)
	}
	return s, nil
}

// Filter rejects the node when it lacks a topology key (no preemption helps), or when putting
// the pod in its domain would make that domain's matching pods exceed the least loaded
// domain's by more than maxSkew.
func (pl *Plugin) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := nodeInfo.Node()
	for i := range s.constraints {
		c := &s.constraints[i]
		value, ok := node.Labels[c.TopologyKey]
		if !ok {
			if logger := klog.FromContext(ctx); logger.V(5).Enabled() {
				logger.Info("Node lacks a topology key of the pod's spread constraints", "node", klog.KObj(node), "topologyKey", c.TopologyKey)
			}
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if s.selfMatch[i] {
			self = 1
		}
		if skew := s.counts[i][value] + self - s.minMatchNum(i); skew > int(c.MaxSkew) {
			// Checked first: building the log's arguments allocates even when it is off.
			if logger := klog.FromContext(ctx); logger.V(5).Enabled() {
				logger.Info("Node would exceed maxSkew", "node", klog.KObj(node), "topologyKey", c.TopologyKey, "skew", skew, "maxSkew", c.MaxSkew)
			}
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}
