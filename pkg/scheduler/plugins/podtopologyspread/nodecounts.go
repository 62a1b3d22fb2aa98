package podtopologyspread

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// countCache remembers, across scheduling cycles, how many pods on each node a query (a
// selector in a namespace) matched, together with the node's generation. Consecutive pods of
// one workload ask the same queries, so after the first of them a cycle counts again only the
// nodes whose pods changed (the one the previous pod went to, mostly) instead of every pod in
// the cluster. A NodeInfo's generation changes with each of its changes, so a remembered count
// is never stale.
type countCache struct {
	mu      sync.Mutex
	entries map[string]*countEntry
	// order lists the keys, least recently used first.
	order []string
}

// maxCachedQueries bounds the memory: a query costs about 40 bytes per node.
const maxCachedQueries = 16

// countEntry is one query's counts, by the node's position in the node list (which is stable
// between cycles unless nodes come or go; a node found elsewhere is simply counted again).
type countEntry struct {
	// busy is held by the cycle that uses the entry; another cycle running at the same time
	// (preemption's dry runs) counts without the cache.
	busy  sync.Mutex
	nodes []nodeCount
}

type nodeCount struct {
	name       string
	generation int64
	count      int
}

// acquire returns the entry for key sized for n nodes, held until release; nil when another
// cycle holds it.
func (c *countCache) acquire(key string, n int) *countEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*countEntry{}
	}
	e, ok := c.entries[key]
	if ok {
		c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == key })
	} else {
		e = &countEntry{}
		c.entries[key] = e
		if len(c.order) >= maxCachedQueries {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.order = append(c.order, key)
	if !e.busy.TryLock() {
		return nil
	}
	if len(e.nodes) != n {
		e.nodes = make([]nodeCount, n)
	}
	return e
}

// release lets other cycles use the entry.
func (e *countEntry) release() {
	if e != nil {
		e.busy.Unlock()
	}
}

// lookup returns the count remembered for the node at position i, if it is still valid.
func (e *countEntry) lookup(i int, ni *framework.NodeInfo) (int, bool) {
	if e == nil {
		return 0, false
	}
	nc := &e.nodes[i]
	if nc.generation != ni.Generation || nc.name != ni.Node().Name {
		return 0, false
	}
	return nc.count, true
}

// store remembers the count of the node at position i.
func (e *countEntry) store(i int, ni *framework.NodeInfo, count int) {
	if e != nil {
		e.nodes[i] = nodeCount{name: ni.Node().Name, generation: ni.Generation, count: count}
	}
}

// acquireCounts returns, for each constraint, the cache entry of its query (the pods of
// namespace ns its selector matches), shared by constraints with equal selectors, and a
// function that releases them all.
func (c *countCache) acquireCounts(ns string, cs []constraint, n int) ([]*countEntry, func()) {
	entries := make([]*countEntry, len(cs))
	byKey := make(map[string]*countEntry, len(cs))
	var held []*countEntry
	for i := range cs {
		key := ns + "\x00" + cs[i].Selector.String()
		e, ok := byKey[key]
		if !ok {
			e = c.acquire(key, n)
			byKey[key] = e
			if e != nil {
				held = append(held, e)
			}
		}
		entries[i] = e
	}
	return entries, func() {
		for _, e := range held {
			e.release()
		}
	}
}

// countOn is countMatching on the node at position i, through the cache entry e (nil: none).
func countOn(e *countEntry, i int, ni *framework.NodeInfo, selector labels.Selector, ns string) int {
	if n, ok := e.lookup(i, ni); ok {
		return n
	}
	n := countMatching(ni.Pods, selector, ns)
	e.store(i, ni, n)
	return n
}
