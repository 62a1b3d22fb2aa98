package cache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// AddNode records a node (or its new version, if known already) and returns a copy of its
// NodeInfo, for logging and tests.
func (c *Cache) AddNode(logger klog.Logger, node *v1.Node) *framework.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setNode(logger, node)
}

// UpdateNode records a node's new version and returns a copy of its NodeInfo. oldNode is not
// needed: the cache remembers what it knew of the node.
func (c *Cache) UpdateNode(logger klog.Logger, oldNode, newNode *v1.Node) *framework.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setNode(logger, newNode)
}

func (c *Cache) setNode(logger klog.Logger, node *v1.Node) *framework.NodeInfo {
	item, ok := c.nodes[node.Name]
	if !ok {
		item = &nodeItem{info: framework.NewNodeInfo()}
		c.nodes[node.Name] = item
	}
	if old := item.info.Node(); old != nil {
		c.removeNodeImageStates(old)
	}
	c.tree.add(logger, node)
	item.info.ImageStates = c.addNodeImageStates(node)
	item.info.SetNode(node)
	c.moveToHead(item)
	return item.info.Snapshot()
}

// RemoveNode forgets a node. Pods still counted on it keep its NodeInfo, without node, until
// their own deletions arrive (they come on another watch, possibly later); such a NodeInfo is
// never in a snapshot.
func (c *Cache) RemoveNode(logger klog.Logger, node *v1.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	if !ok || item.info.Node() == nil {
		return fmt.Errorf("node %q is not found", node.Name)
	}
	// What the cache recorded, not the argument: a delete may carry a stale object.
	c.removeNodeImageStates(item.info.Node())
	item.info.ImageStates = map[string]*framework.ImageStateSummary{}
	item.info.RemoveNode()
	if len(item.info.Pods) == 0 {
		c.unlink(item)
		delete(c.nodes, node.Name)
	} else {
		c.moveToHead(item)
	}
	c.tree.remove(logger, node.Name)
	return nil
}

// addNodeImageStates records the node's images and returns its ImageStates map, whose
// summaries count this node.
func (c *Cache) addNodeImageStates(node *v1.Node) map[string]*framework.ImageStateSummary {
	for _, image := range node.Status.Images {
		for _, name := range image.Names {
			st, ok := c.images[name]
			if !ok {
				st = &imageState{size: image.SizeBytes, nodes: sets.New[string]()}
				c.images[name] = st
			}
			st.nodes.Insert(node.Name)
		}
	}
	return c.imageSummaries(node)
}

// imageSummaries builds the ImageStates map of a node from the cluster-wide image states.
func (c *Cache) imageSummaries(node *v1.Node) map[string]*framework.ImageStateSummary {
	out := make(map[string]*framework.ImageStateSummary, len(node.Status.Images))
	for _, image := range node.Status.Images {
		for _, name := range image.Names {
			if st, ok := c.images[name]; ok {
				out[name] = &framework.ImageStateSummary{Size: st.size, NumNodes: st.nodes.Len()}
			}
		}
	}
	return out
}

// removeNodeImageStates forgets the node's images; an image on no node is forgotten.
func (c *Cache) removeNodeImageStates(node *v1.Node) {
	for _, image := range node.Status.Images {
		for _, name := range image.Names {
			if st, ok := c.images[name]; ok {
				st.nodes.Delete(node.Name)
				if st.nodes.Len() == 0 {
					delete(c.images, name)
				}
			}
		}
	}
}

// refreshImageStates replaces a NodeInfo's ImageStates map if another node gained or lost one
// of its images since it was built. UpdateSnapshot calls it for the nodes it copies, so that
// NumNodes is current as of the copy (as kube-scheduler's) without touching every node that
// has an image whenever one more node pulls it. The map is replaced, never changed, because
// earlier snapshots share it.
func (c *Cache) refreshImageStates(ni *framework.NodeInfo) {
	node := ni.Node()
	if node == nil {
		return
	}
	for name, sum := range ni.ImageStates {
		if st, ok := c.images[name]; ok && st.nodes.Len() != sum.NumNodes {
			ni.ImageStates = c.imageSummaries(node)
			return
		}
	}
}
