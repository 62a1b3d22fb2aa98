package interpodaffinity

import (
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// nodeMemo remembers, across scheduling cycles, what a per-node computation gave on each node
// together with the node's generation. Consecutive pods of one workload have the same terms and
// labels, so they ask the same questions of every node; after the first of them a cycle
// computes again only on the nodes whose pods or labels changed (mostly the node the previous
// pod went to) instead of going over every pod in the cluster. A NodeInfo's generation changes
// with each of its changes, so a remembered answer is never stale.
//
// Two kinds of questions are remembered, each under a key that says everything its answer
// depends on besides the node:
//   - how many pods on the node match all of some terms of the incoming pod (countQuery);
//   - which topology keys, with what weight, the existing pods' terms that match the incoming
//     pod give (symmetric terms, keyed by the incoming pod's namespace and labels).
type nodeMemo struct {
	mu      sync.Mutex
	entries map[string]*memoEntry
	// order lists the keys, least recently used first.
	order []string
}

// maxMemoEntries bounds the memory: an entry costs about 50 bytes per node.
const maxMemoEntries = 16

// memoEntry is one question's answers, by the node's position in the node list (which is
// stable between cycles unless nodes come or go; a node found elsewhere is computed again).
type memoEntry struct {
	// busy is held by the cycle that uses the entry; another cycle running at the same time
	// (preemption's dry runs) computes without it.
	busy  sync.Mutex
	nodes []memoNode
}

type memoNode struct {
	name       string
	generation int64
	count      int64
	scores     nodeScores
}

// lookup returns the answer remembered for node ni at position i, if still valid.
func (e *memoEntry) lookup(i int, ni *framework.NodeInfo) (*memoNode, bool) {
	if e == nil {
		return nil, false
	}
	m := &e.nodes[i]
	return m, m.generation == ni.Generation && m.name == ni.Node().Name
}

// store remembers the answer for node ni at position i.
func (e *memoEntry) store(i int, ni *framework.NodeInfo, count int64, scores nodeScores) {
	if e != nil {
		e.nodes[i] = memoNode{name: ni.Node().Name, generation: ni.Generation, count: count, scores: scores}
	}
}

// acquire returns the entries of keys (equal keys share one) sized for n nodes, and a
// function that releases them. An entry another cycle holds is nil: computed without memo.
func (c *nodeMemo) acquire(keys []string, n int) ([]*memoEntry, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*memoEntry, len(keys))
	var held []*memoEntry
	for i, key := range keys {
		if j := slices.Index(keys[:i], key); j >= 0 {
			out[i] = out[j]
			continue
		}
		e := c.touch(key)
		if !e.busy.TryLock() {
			continue
		}
		if len(e.nodes) != n {
			e.nodes = make([]memoNode, n)
		}
		out[i] = e
		held = append(held, e)
	}
	return out, func() {
		for _, e := range held {
			e.busy.Unlock()
		}
	}
}

// touch returns the entry of key, created if need be, as the most recently used.
func (c *nodeMemo) touch(key string) *memoEntry {
	if c.entries == nil {
		c.entries = map[string]*memoEntry{}
	}
	e, ok := c.entries[key]
	if ok {
		c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == key })
	} else {
		e = &memoEntry{}
		c.entries[key] = e
		if len(c.order) >= maxMemoEntries {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.order = append(c.order, key)
	return e
}

// countQuery counts the pods on a node that match all its terms (the incoming pod's terms,
// namespace selectors merged).
type countQuery struct {
	key   string
	terms []framework.AffinityTerm
}

func newCountQuery(terms []framework.AffinityTerm) countQuery {
	keys := make([]string, len(terms))
	for i := range terms {
		keys[i] = termKey(&terms[i])
	}
	return countQuery{key: "count\x00" + strings.Join(keys, "\x01"), terms: terms}
}

// termKey identifies what a term matches (not where: the topology key does not change which
// pods match).
func termKey(t *framework.AffinityTerm) string {
	return strings.Join(sets.List(t.Namespaces), ",") + "\x00" + selectorKey(t.NamespaceSelector) + "\x00" + selectorKey(t.Selector)
}

// selectorKey is the selector's string, telling apart the two that print as "".
func selectorKey(s labels.Selector) string {
	if s.Empty() {
		return "<all>"
	}
	if _, ok := s.Requirements(); !ok {
		return "<none>"
	}
	return s.String()
}

// countOn counts q on node ni at position i, through the memo entry e (nil: none).
func countOn(e *memoEntry, i int, ni *framework.NodeInfo, q *countQuery) int64 {
	if m, ok := e.lookup(i, ni); ok {
		return m.count
	}
	var n int64
	for _, pi := range ni.Pods {
		if podMatchesAllTerms(q.terms, pi.Pod) {
			n++
		}
	}
	e.store(i, ni, n, nil)
	return n
}

// symmetricKey names the answers that depend on the incoming pod only through its namespace,
// its labels and its namespace's labels: which existing pods' terms it matches.
func symmetricKey(kind string, pod *v1.Pod, nsLabels labels.Set) string {
	return kind + "\x00" + pod.Namespace + "\x00" + labels.Set(pod.Labels).String() + "\x00" + nsLabels.String()
}
