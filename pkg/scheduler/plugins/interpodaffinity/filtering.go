package interpodaffinity

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

const preFilterStateKey framework.StateKey = "PreFilter" + Name

// Filter's reasons, as kube-scheduler words them.
const (
	// ErrReasonExistingAntiAffinityRulesNotMatch: a pod in the node's domain rejects the pod.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	// ErrReasonAffinityRulesNotMatch: the node's domain lacks the pods the pod needs.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch: the node's domain holds a pod the pod rejects.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"
)

// topologyPair is a domain: a topology key and one of its values.
type topologyPair struct {
	key, value string
}

// topologyCounts counts matching pods per domain; only positive counts are kept (a count that
// falls to zero is deleted).
type topologyCounts map[topologyPair]int64

// add adds n for the node's domain of key, if the node has the key.
func (m topologyCounts) add(node *v1.Node, key string, n int64) {
	value, ok := node.Labels[key]
	if !ok {
		return
	}
	p := topologyPair{key, value}
	m[p] += n
	if m[p] == 0 {
		delete(m, p)
	}
}

// has reports a positive count in the node's domain of key.
func (m topologyCounts) has(node *v1.Node, key string) bool {
	value, ok := node.Labels[key]
	return ok && m[topologyPair{key, value}] > 0
}

// preFilterState is what PreFilter counts for Filter.
type preFilterState struct {
	// podInfo is the incoming pod's, with its terms' namespace selectors merged into their
	// namespace lists; namespaceLabels are its namespace's labels.
	podInfo         *framework.PodInfo
	namespaceLabels labels.Set
	// selfAffinity: the pod matches all its own affinity terms, so it may be the first of a
	// group that wants to be together.
	selfAffinity bool
	// affinityCounts: per domain, the pods that match all the pod's affinity terms.
	affinityCounts topologyCounts
	// antiAffinityCounts: per domain, the pods that match one of the pod's anti-affinity terms.
	antiAffinityCounts topologyCounts
	// existingAntiAffinityCounts: per domain, the existing pods' anti-affinity terms the
	// incoming pod matches; existingKeys are their topology keys, so that Filter looks up a few
	// keys rather than all the node's labels.
	existingAntiAffinityCounts topologyCounts
	existingKeys               []string
}

// Clone copies the counts; preemption changes them on its copy.
func (s *preFilterState) Clone() framework.StateData {
	if s == nil {
		return nil
	}
	out := *s
	out.affinityCounts = maps.Clone(s.affinityCounts)
	out.antiAffinityCounts = maps.Clone(s.antiAffinityCounts)
	out.existingAntiAffinityCounts = maps.Clone(s.existingAntiAffinityCounts)
	out.existingKeys = slices.Clone(s.existingKeys)
	return &out
}

// updateWithPod adds (multiplier 1) or removes (-1) a pod on node to or from the counts.
func (s *preFilterState) updateWithPod(pi *framework.PodInfo, node *v1.Node, multiplier int64) {
	if s == nil || node == nil {
		return
	}
	incoming := s.podInfo.Pod
	for _, t := range pi.RequiredAntiAffinityTerms {
		if t.Matches(incoming, s.namespaceLabels) {
			s.existingAntiAffinityCounts.add(node, t.TopologyKey, multiplier)
			if !slices.Contains(s.existingKeys, t.TopologyKey) {
				s.existingKeys = append(s.existingKeys, t.TopologyKey)
			}
		}
	}
	if podMatchesAllTerms(s.podInfo.RequiredAffinityTerms, pi.Pod) {
		for _, t := range s.podInfo.RequiredAffinityTerms {
			s.affinityCounts.add(node, t.TopologyKey, multiplier)
		}
	}
	for _, t := range s.podInfo.RequiredAntiAffinityTerms {
		if t.Matches(pi.Pod, nil) {
			s.antiAffinityCounts.add(node, t.TopologyKey, multiplier)
		}
	}
}

// PreFilter counts, per domain, the existing pods that the pod's required affinity and
// anti-affinity terms match, and the existing pods' required anti-affinity terms that the pod
// matches. Skip when there is nothing to check.
func (pl *Plugin) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	pi, err := parsedPodInfo(pod)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %+v", err))
	}
	for i := range pi.RequiredAffinityTerms {
		if err := pl.mergeNamespaces(&pi.RequiredAffinityTerms[i]); err != nil {
			return nil, framework.AsStatus(err)
		}
	}
	for i := range pi.RequiredAntiAffinityTerms {
		if err := pl.mergeNamespaces(&pi.RequiredAntiAffinityTerms[i]); err != nil {
			return nil, framework.AsStatus(err)
		}
	}
	s := &preFilterState{
		podInfo:         pi,
		namespaceLabels: pl.namespaceLabels(klog.FromContext(ctx), pod.Namespace),
		selfAffinity:    podMatchesAllTerms(pi.RequiredAffinityTerms, pod),
	}
	withAntiAffinity, err := pl.sharedLister.NodeInfos().HavePodsWithRequiredAntiAffinityList()
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("failed to list NodeInfos with pods with affinity: %w", err))
	}
	s.existingAntiAffinityCounts, s.existingKeys = pl.existingAntiAffinityCounts(ctx, pod, s.namespaceLabels, withAntiAffinity)
	s.affinityCounts, s.antiAffinityCounts = pl.incomingCounts(ctx, pi, nodes)

	if len(s.existingAntiAffinityCounts) == 0 && len(pi.RequiredAffinityTerms) == 0 && len(pi.RequiredAntiAffinityTerms) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, s)
	return nil, nil
}

// existingAntiAffinityCounts counts the required anti-affinity terms of the pods on nodes that
// the incoming pod matches, per domain of the node they run on, and lists their topology keys.
func (pl *Plugin) existingAntiAffinityCounts(ctx context.Context, pod *v1.Pod, nsLabels labels.Set, nodes []*framework.NodeInfo) (topologyCounts, []string) {
	entries, release := pl.memo.acquire([]string{symmetricKey("anti", pod, nsLabels)}, len(nodes))
	defer release()
	// perNode[n] counts the matched terms on node n by topology key; nil (no allocation) when
	// none, which is the usual case.
	perNode := make([]nodeScores, len(nodes))
	pl.until(ctx, len(nodes), func(n int) {
		ni := nodes[n]
		if ni.Node() == nil {
			return
		}
		if m, ok := entries[0].lookup(n, ni); ok {
			perNode[n] = m.scores
			return
		}
		var keys nodeScores
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			for i := range existing.RequiredAntiAffinityTerms {
				if t := &existing.RequiredAntiAffinityTerms[i]; t.Matches(pod, nsLabels) {
					keys.add(t.TopologyKey, 1)
				}
			}
		}
		entries[0].store(n, ni, 0, keys)
		perNode[n] = keys
	})
	counts := topologyCounts{}
	var distinct []string
	for n, keys := range perNode {
		for _, k := range keys {
			counts.add(nodes[n].Node(), k.key, k.score)
			if !slices.Contains(distinct, k.key) {
				distinct = append(distinct, k.key)
			}
		}
	}
	return counts, distinct
}

// incomingCounts counts, per domain, the pods on nodes that match all the incoming pod's
// affinity terms, and those that match each of its anti-affinity terms.
func (pl *Plugin) incomingCounts(ctx context.Context, pi *framework.PodInfo, nodes []*framework.NodeInfo) (affinity, antiAffinity topologyCounts) {
	affinity, antiAffinity = topologyCounts{}, topologyCounts{}
	affTerms, antiTerms := pi.RequiredAffinityTerms, pi.RequiredAntiAffinityTerms
	if len(affTerms) == 0 && len(antiTerms) == 0 {
		return affinity, antiAffinity
	}
	// Query 0 is "matches all affinity terms" (when there are some); then one per anti term.
	var queries []countQuery
	if len(affTerms) > 0 {
		queries = append(queries, newCountQuery(affTerms))
	}
	for i := range antiTerms {
		queries = append(queries, newCountQuery(antiTerms[i:i+1]))
	}
	keys := make([]string, len(queries))
	for q := range queries {
		keys[q] = queries[q].key
	}
	entries, release := pl.memo.acquire(keys, len(nodes))
	defer release()
	// Counted per node into a flat slice, then summed per domain: no allocation per node.
	nq := len(queries)
	perNode := make([]int64, len(nodes)*nq)
	pl.until(ctx, len(nodes), func(n int) {
		if nodes[n].Node() == nil {
			return
		}
		for q := range queries {
			perNode[n*nq+q] = countOn(entries[q], n, nodes[n], &queries[q])
		}
	})
	for n, ni := range nodes {
		row := perNode[n*nq : (n+1)*nq]
		if len(affTerms) > 0 {
			if c := row[0]; c > 0 {
				for i := range affTerms {
					affinity.add(ni.Node(), affTerms[i].TopologyKey, c)
				}
			}
			row = row[1:]
		}
		for i := range antiTerms {
			if c := row[i]; c > 0 {
				antiAffinity.add(ni.Node(), antiTerms[i].TopologyKey, c)
			}
		}
	}
	return affinity, antiAffinity
}

// PreFilterExtensions returns the plugin: preemption and nominated pods change the counts.
func (pl *Plugin) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod counts a pod added to nodeInfo's node.
func (pl *Plugin) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, podInfoToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(podInfoToAdd, nodeInfo.Node(), 1)
	return nil
}

// RemovePod stops counting a pod removed from nodeInfo's node.
func (pl *Plugin) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod, podInfoToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(podInfoToRemove, nodeInfo.Node(), -1)
	return nil
}

func getPreFilterState(state *framework.CycleState) (*preFilterState, error) {
	d, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("error reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v  convert to interpodaffinity.state error", d)
	}
	return s, nil
}

// satisfiesAffinity: the node has every affinity term's topology key, and its domains hold a
// pod matching all terms — or no pod anywhere does and the pod matches its own terms (the
// first of a group may go anywhere that has the keys).
func (s *preFilterState) satisfiesAffinity(node *v1.Node) bool {
	podsExist := true
	for i := range s.podInfo.RequiredAffinityTerms {
		key := s.podInfo.RequiredAffinityTerms[i].TopologyKey
		value, ok := node.Labels[key]
		if !ok {
			return false
		}
		if s.affinityCounts[topologyPair{key, value}] <= 0 {
			podsExist = false
		}
	}
	return podsExist || (len(s.affinityCounts) == 0 && s.selfAffinity)
}

// violatesAntiAffinity: the node's domain of one of the pod's anti-affinity terms holds a pod
// the term matches.
func (s *preFilterState) violatesAntiAffinity(node *v1.Node) bool {
	if len(s.antiAffinityCounts) == 0 {
		return false
	}
	for i := range s.podInfo.RequiredAntiAffinityTerms {
		if s.antiAffinityCounts.has(node, s.podInfo.RequiredAntiAffinityTerms[i].TopologyKey) {
			return true
		}
	}
	return false
}

// violatesExistingAntiAffinity: a pod in one of the node's domains has an anti-affinity term
// the incoming pod matches.
func (s *preFilterState) violatesExistingAntiAffinity(node *v1.Node) bool {
	if len(s.existingAntiAffinityCounts) == 0 {
		return false
	}
	for _, key := range s.existingKeys {
		if s.existingAntiAffinityCounts.has(node, key) {
			return true
		}
	}
	return false
}

// Filter checks the pod's affinity (UnschedulableAndUnresolvable: removing pods cannot add
// the pods it needs), its anti-affinity and the existing pods' anti-affinity (Unschedulable:
// preemption may remove the pods in the way), from PreFilter's counts.
func (pl *Plugin) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := nodeInfo.Node()
	if len(s.podInfo.RequiredAffinityTerms) > 0 && !s.satisfiesAffinity(node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	if s.violatesAntiAffinity(node) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	}
	if s.violatesExistingAntiAffinity(node) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}
