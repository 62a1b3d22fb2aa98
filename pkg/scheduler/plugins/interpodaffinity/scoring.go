package interpodaffinity

import (
	"context"
	"fmt"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

const preScoreStateKey framework.StateKey = "PreScore" + Name

// keyScore is the score of each domain (value) of one topology key.
type keyScore struct {
	key    string
	values map[string]int64
}

// preScoreState holds, per topology key, the summed weights of each domain.
type preScoreState struct {
	scores []keyScore
}

// Clone shares the state: nothing changes it after PreScore.
func (s *preScoreState) Clone() framework.StateData { return s }

// nodeScores accumulates the weights of the pods on one node. All go to the node's own
// domains, so they are kept per topology key; a node sees few keys, so a slice beats a map.
type nodeScores []struct {
	key   string
	score int64
}

func (ns *nodeScores) add(key string, delta int64) {
	for i := range *ns {
		if (*ns)[i].key == key {
			(*ns)[i].score += delta
			return
		}
	}
	*ns = append(*ns, struct {
		key   string
		score int64
	}{key, delta})
}

// term adds weight*sign when pod (in a namespace with nsLabels) matches t and the node has
// t's topology key.
func (ns *nodeScores) term(t *framework.AffinityTerm, weight int32, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, sign int32) {
	if _, ok := node.Labels[t.TopologyKey]; ok && t.Matches(pod, nsLabels) {
		ns.add(t.TopologyKey, int64(weight*sign))
	}
}

func (ns *nodeScores) terms(ts []framework.WeightedAffinityTerm, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, sign int32) {
	for i := range ts {
		ns.term(&ts[i].AffinityTerm, ts[i].Weight, pod, nsLabels, node, sign)
	}
}

// symmetricScores sums, on one node, the weights of the existing pods' terms that the
// incoming pod (in a namespace with nsLabels) matches: required affinity at
// hardPodAffinityWeight, preferred affinity and anti-affinity at their weights.
func (pl *Plugin) symmetricScores(ni *framework.NodeInfo, pod *v1.Pod, nsLabels labels.Set) nodeScores {
	node := ni.Node()
	var ns nodeScores
	for _, existing := range ni.PodsWithAffinity {
		if pl.hardPodAffinityWeight > 0 {
			for i := range existing.RequiredAffinityTerms {
				ns.term(&existing.RequiredAffinityTerms[i], pl.hardPodAffinityWeight, pod, nsLabels, node, 1)
			}
		}
		ns.terms(existing.PreferredAffinityTerms, pod, nsLabels, node, 1)
		ns.terms(existing.PreferredAntiAffinityTerms, pod, nsLabels, node, -1)
	}
	return ns
}

// PreScore sums, per domain, the weights that relate the pod to the pods already there: its
// preferred affinity (+) and anti-affinity (-) terms that they match, and their preferred
// terms and required affinity terms (at hardPodAffinityWeight) that it matches.
func (pl *Plugin) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	a := pod.Spec.Affinity
	hasPreferred := a != nil && ((a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0))
	if pl.ignorePreferredTermsOfExistingPods && !hasPreferred {
		return framework.NewStatus(framework.Skip)
	}
	// Without preferred terms of its own, only pods with affinity terms can relate to the pod.
	var nodes []*framework.NodeInfo
	var err error
	if hasPreferred {
		nodes, err = pl.sharedLister.NodeInfos().List()
	} else {
		nodes, err = pl.sharedLister.NodeInfos().HavePodsWithAffinityList()
	}
	if err != nil {
		return framework.AsStatus(fmt.Errorf("failed to list nodes: %w", err))
	}
	pi, err := parsedPodInfo(pod)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("failed to parse pod: %w", err))
	}
	for i := range pi.PreferredAffinityTerms {
		if err := pl.mergeNamespaces(&pi.PreferredAffinityTerms[i].AffinityTerm); err != nil {
			return framework.AsStatus(fmt.Errorf("updating PreferredAffinityTerms: %w", err))
		}
	}
	for i := range pi.PreferredAntiAffinityTerms {
		if err := pl.mergeNamespaces(&pi.PreferredAntiAffinityTerms[i].AffinityTerm); err != nil {
			return framework.AsStatus(fmt.Errorf("updating PreferredAntiAffinityTerms: %w", err))
		}
	}
	nsLabels := pl.namespaceLabels(klog.FromContext(ctx), pod.Namespace)

	// The pod's own preferred terms are counted against every pod (through the memo);
	// the existing pods' terms only matter for pods that have some.
	var queries []countQuery
	var weights []int64 // weight and sign of each query
	for i := range pi.PreferredAffinityTerms {
		queries = append(queries, newCountQuery([]framework.AffinityTerm{pi.PreferredAffinityTerms[i].AffinityTerm}))
		weights = append(weights, int64(pi.PreferredAffinityTerms[i].Weight))
	}
	for i := range pi.PreferredAntiAffinityTerms {
		queries = append(queries, newCountQuery([]framework.AffinityTerm{pi.PreferredAntiAffinityTerms[i].AffinityTerm}))
		weights = append(weights, -int64(pi.PreferredAntiAffinityTerms[i].Weight))
	}
	keys := []string{symmetricKey("score", pod, nsLabels)}
	for q := range queries {
		keys = append(keys, queries[q].key)
	}
	entries, release := pl.memo.acquire(keys, len(nodes))
	defer release()
	symmetric, counted := entries[0], entries[1:]

	perNode := make([]nodeScores, len(nodes))
	pl.until(ctx, len(nodes), func(n int) {
		ni := nodes[n]
		node := ni.Node()
		if node == nil || len(node.Labels) == 0 {
			return
		}
		// The existing pods' terms that the pod matches: remembered per node as they are (the
		// slice is shared with the memo, so it is copied before anything is added).
		var sym nodeScores
		if m, ok := symmetric.lookup(n, ni); ok {
			sym = m.scores
		} else {
			sym = pl.symmetricScores(ni, pod, nsLabels)
			symmetric.store(n, ni, 0, sym)
		}
		ns := slices.Clone(sym)
		for q := range queries {
			key := queries[q].terms[0].TopologyKey
			if _, ok := node.Labels[key]; !ok {
				continue
			}
			if c := countOn(counted[q], n, ni, &queries[q]); c > 0 {
				ns.add(key, c*weights[q])
			}
		}
		perNode[n] = ns
	})

	byKey := map[string]map[string]int64{}
	for n, ns := range perNode {
		for _, ks := range ns {
			values := byKey[ks.key]
			if values == nil {
				values = map[string]int64{}
				byKey[ks.key] = values
			}
			values[nodes[n].Node().Labels[ks.key]] += ks.score
		}
	}
	if len(byKey) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{scores: make([]keyScore, 0, len(byKey))}
	for key, values := range byKey {
		s.scores = append(s.scores, keyScore{key, values})
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score sums the scores of the node's domains: positive for affinity, negative for
// anti-affinity. NormalizeScore scales them.
func (pl *Plugin) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	s, err := getPreScoreState(state)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	node := nodeInfo.Node()
	var score int64
	for i := range s.scores {
		if v, ok := node.Labels[s.scores[i].key]; ok {
			score += s.scores[i].values[v]
		}
	}
	return score, nil
}

// ScoreExtensions returns the plugin for NormalizeScore.
func (pl *Plugin) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the scores linearly from [min, max] to [0, MaxNodeScore]; all 0 when
// they are equal.
func (pl *Plugin) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s, err := getPreScoreState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(s.scores) == 0 {
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range scores {
		lo = min(lo, scores[i].Score)
		hi = max(hi, scores[i].Score)
	}
	diff := hi - lo
	for i := range scores {
		f := float64(0)
		if diff > 0 {
			f = float64(framework.MaxNodeScore) * (float64(scores[i].Score-lo) / float64(diff))
		}
		scores[i].Score = int64(f)
	}
	return nil
}

func getPreScoreState(state *framework.CycleState) (*preScoreState, error) {
	d, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, fmt.Errorf("failed to read %q from cycleState: %w", preScoreStateKey, err)
	}
	s, ok := d.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%+v  convert to interpodaffinity.preScoreState error", d)
	}
	return s, nil
}
