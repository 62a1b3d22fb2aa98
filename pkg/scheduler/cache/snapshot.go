package cache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Snapshot is the cluster as one scheduling cycle sees it: copies of the NodeInfos of the
// nodes that exist, listed zone by zone in turn. It does not change during the cycle; the
// next UpdateSnapshot overwrites the NodeInfos that changed in place, so a NodeInfo taken
// from it is valid for one cycle only.
type Snapshot struct {
	nodeInfoMap map[string]*framework.NodeInfo
	// nodeInfoList is nodeInfoMap in node tree order.
	nodeInfoList []*framework.NodeInfo
	// havePodsWithAffinityNodeInfoList are the nodes with pods that have (anti-)affinity
	// terms, havePodsWithRequiredAntiAffinityNodeInfoList those with pods that have required
	// anti-affinity terms: InterPodAffinity looks only at these.
	havePodsWithAffinityNodeInfoList             []*framework.NodeInfo
	havePodsWithRequiredAntiAffinityNodeInfoList []*framework.NodeInfo
	// generation is the newest NodeInfo generation copied; treeGeneration the node tree
	// generation the list was built from.
	generation     int64
	treeGeneration int64
}

var (
	_ framework.SharedLister   = &Snapshot{}
	_ framework.NodeInfoLister = &Snapshot{}
)

// NewEmptySnapshot returns a snapshot with no nodes, for UpdateSnapshot to fill.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}}
}

// NewSnapshot builds a snapshot of these nodes with these pods on them (by Spec.NodeName),
// image states included, for tests. Pods need not have distinct UIDs.
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	s := NewEmptySnapshot()
	for _, pod := range pods {
		ni, ok := s.nodeInfoMap[pod.Spec.NodeName]
		if !ok {
			ni = framework.NewNodeInfo()
			s.nodeInfoMap[pod.Spec.NodeName] = ni
		}
		ni.AddPod(framework.NewPodInfo(pod))
	}
	imageNodes := map[string]sets.Set[string]{}
	for _, node := range nodes {
		for _, image := range node.Status.Images {
			for _, name := range image.Names {
				if imageNodes[name] == nil {
					imageNodes[name] = sets.New[string]()
				}
				imageNodes[name].Insert(node.Name)
			}
		}
	}
	tree := newNodeTree()
	logger := klog.Background()
	for _, node := range nodes {
		ni, ok := s.nodeInfoMap[node.Name]
		if !ok {
			ni = framework.NewNodeInfo()
			s.nodeInfoMap[node.Name] = ni
		}
		ni.SetNode(node)
		for _, image := range node.Status.Images {
			for _, name := range image.Names {
				ni.ImageStates[name] = &framework.ImageStateSummary{Size: image.SizeBytes, NumNodes: imageNodes[name].Len()}
			}
		}
		tree.add(logger, node)
	}
	for _, name := range tree.list() {
		s.nodeInfoList = append(s.nodeInfoList, s.nodeInfoMap[name])
	}
	s.updateAffinityLists()
	return s
}

// NodeInfos returns the snapshot as a NodeInfoLister.
func (s *Snapshot) NodeInfos() framework.NodeInfoLister { return s }

// NumNodes returns the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }

// List returns every node, zones interleaved.
func (s *Snapshot) List() ([]*framework.NodeInfo, error) { return s.nodeInfoList, nil }

// HavePodsWithAffinityList returns the nodes with pods that have (anti-)affinity terms.
func (s *Snapshot) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithAffinityNodeInfoList, nil
}

// HavePodsWithRequiredAntiAffinityList returns the nodes with pods that have required
// anti-affinity terms.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithRequiredAntiAffinityNodeInfoList, nil
}

// Get returns one node's NodeInfo.
func (s *Snapshot) Get(nodeName string) (*framework.NodeInfo, error) {
	if ni, ok := s.nodeInfoMap[nodeName]; ok && ni.Node() != nil {
		return ni, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", nodeName)
}

// updateAffinityLists rebuilds the affinity lists from the node list.
func (s *Snapshot) updateAffinityLists() {
	s.havePodsWithAffinityNodeInfoList = nil
	s.havePodsWithRequiredAntiAffinityNodeInfoList = nil
	for _, ni := range s.nodeInfoList {
		if len(ni.PodsWithAffinity) > 0 {
			s.havePodsWithAffinityNodeInfoList = append(s.havePodsWithAffinityNodeInfoList, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.havePodsWithRequiredAntiAffinityNodeInfoList = append(s.havePodsWithRequiredAntiAffinityNodeInfoList, ni)
		}
	}
}

// UpdateSnapshot brings s up to date with the cache at the start of a scheduling cycle. It
// copies only the NodeInfos changed since s was last updated, rebuilds the node list only if
// nodes came, went or changed zone, and the affinity lists only if, besides, a node gained
// its first or lost its last pod with affinity. Nodes that were removed but still have pods
// are left out.
func (c *Cache) UpdateSnapshot(logger klog.Logger, s *Snapshot) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updateSnapshot(s, false)
	if c.consistent(s) {
		return nil
	}
	// A bug, not a state to live with: say so, and start over from the cache.
	logger.Error(nil, "Snapshot is not consistent with the scheduler cache; rebuilding it",
		"listedNodes", len(s.nodeInfoList), "snapshotNodes", len(s.nodeInfoMap),
		"treeNodes", c.tree.numNodes, "cachedNodeInfos", len(c.nodes))
	*s = *NewEmptySnapshot()
	c.updateSnapshot(s, true)
	if !c.consistent(s) {
		return fmt.Errorf("snapshot is not consistent with the scheduler cache: %d nodes listed, %d in the snapshot, %d in the cache",
			len(s.nodeInfoList), len(s.nodeInfoMap), c.tree.numNodes)
	}
	return nil
}

func (c *Cache) consistent(s *Snapshot) bool {
	return len(s.nodeInfoList) == c.tree.numNodes && len(s.nodeInfoMap) == c.tree.numNodes
}

// updateSnapshot does UpdateSnapshot's work; the caller holds the lock.
func (c *Cache) updateSnapshot(s *Snapshot, relist bool) {
	relist = relist || s.treeGeneration != c.tree.generation
	affinityChanged := false
	// The list runs from the most recently changed NodeInfo, so the first one the snapshot
	// already has ends the walk.
	for item := c.head; item != nil && item.info.Generation > s.generation; item = item.next {
		node := item.info.Node()
		if node == nil {
			continue
		}
		c.refreshImageStates(item.info)
		clone := item.info.Snapshot()
		existing, ok := s.nodeInfoMap[node.Name]
		if !ok {
			s.nodeInfoMap[node.Name] = clone
			relist = true
			continue
		}
		if (len(existing.PodsWithAffinity) > 0) != (len(clone.PodsWithAffinity) > 0) ||
			(len(existing.PodsWithRequiredAntiAffinity) > 0) != (len(clone.PodsWithRequiredAntiAffinity) > 0) {
			affinityChanged = true
		}
		// In place: the lists hold this pointer and need no rebuild.
		*existing = *clone
	}
	if c.head != nil {
		s.generation = c.head.info.Generation
	}
	if relist {
		for name := range s.nodeInfoMap {
			if !c.tree.has(name) {
				delete(s.nodeInfoMap, name)
			}
		}
		names := c.tree.list()
		s.nodeInfoList = make([]*framework.NodeInfo, 0, len(names))
		for _, name := range names {
			if ni, ok := s.nodeInfoMap[name]; ok {
				s.nodeInfoList = append(s.nodeInfoList, ni)
			}
		}
		s.treeGeneration = c.tree.generation
	}
	if relist || affinityChanged {
		s.updateAffinityLists()
	}
}
