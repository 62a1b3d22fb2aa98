package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/topology"
	"k8s.io/klog/v2"
)

// nodeTree groups node names by zone (region and zone labels) so that the snapshot can list
// nodes zone by zone in turn. findNodesThatFitPod stops once it has found enough feasible
// nodes, so an interleaved list makes those first nodes span zones rather than fill one.
// It is not safe for concurrent use: the Cache's mutex guards it.
type nodeTree struct {
	zones    []string            // zone keys in the order they first appeared
	tree     map[string][]string // zone key → node names, in the order they were added
	zoneOf   map[string]string   // node name → its zone key, so removal needs no labels
	numNodes int
	// generation changes whenever the membership or order changes, so that a snapshot
	// knows when to rebuild its node list.
	generation int64
}

func newNodeTree() *nodeTree {
	return &nodeTree{tree: map[string][]string{}, zoneOf: map[string]string{}}
}

// add puts a node at the end of its zone; a node already in the tree moves zones if its
// labels changed.
func (t *nodeTree) add(logger klog.Logger, n *v1.Node) {
	zone := topology.GetZoneKey(n)
	if old, ok := t.zoneOf[n.Name]; ok {
		if old == zone {
			return
		}
		t.remove(logger, n.Name)
	}
	if _, ok := t.tree[zone]; !ok {
		t.zones = append(t.zones, zone)
	}
	t.tree[zone] = append(t.tree[zone], n.Name)
	t.zoneOf[n.Name] = zone
	t.numNodes++
	t.generation++
	logger.V(5).Info("Added node to the node tree", "node", klog.KObj(n), "zone", zone)
}

// remove takes a node out; it reports whether the node was there.
func (t *nodeTree) remove(logger klog.Logger, name string) bool {
	zone, ok := t.zoneOf[name]
	if !ok {
		return false
	}
	names := t.tree[zone]
	for i, n := range names {
		if n == name {
			names = append(names[:i], names[i+1:]...)
			break
		}
	}
	if len(names) == 0 {
		delete(t.tree, zone)
		for i, z := range t.zones {
			if z == zone {
				t.zones = append(t.zones[:i], t.zones[i+1:]...)
				break
			}
		}
	} else {
		t.tree[zone] = names
	}
	delete(t.zoneOf, name)
	t.numNodes--
	t.generation++
	logger.V(5).Info("Removed node from the node tree", "node", klog.KRef("", name), "zone", zone)
	return true
}

func (t *nodeTree) has(name string) bool {
	_, ok := t.zoneOf[name]
	return ok
}

// list returns the node names taking one from each zone in turn: the first node of every
// zone, then the second of every zone, and so on.
func (t *nodeTree) list() []string {
	out := make([]string, 0, t.numNodes)
	for i := 0; ; i++ {
		added := false
		for _, zone := range t.zones {
			if names := t.tree[zone]; i < len(names) {
				out = append(out, names[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}
