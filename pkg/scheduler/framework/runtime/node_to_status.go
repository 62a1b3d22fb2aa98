package runtime

import "github.com/berth-cluster/berth/pkg/scheduler/framework"

// NodeToStatus is what filtering said of each node, for PostFilter (preemption) and for the
// "0/3 nodes are available: ..." message. Nodes filtered one by one have their own status;
// the others share the absent-nodes status: when PreFilter rejected the pod, or its result
// left nodes out, the scheduler sets the absent-nodes status (UnschedulableAndUnresolvable
// with PreFilter's message) instead of one status per node.
//
// Set is not safe for concurrent use: collect the per-node statuses, then Set them.
type NodeToStatus struct {
	nodeToStatus      map[string]*framework.Status
	absentNodesStatus *framework.Status
}

var _ framework.NodeToStatusReader = &NodeToStatus{}

// NewDefaultNodeToStatus returns a NodeToStatus with no node, whose absent nodes are
// UnschedulableAndUnresolvable.
func NewDefaultNodeToStatus() *NodeToStatus {
	return NewNodeToStatus(map[string]*framework.Status{}, framework.NewStatus(framework.UnschedulableAndUnresolvable))
}

// NewNodeToStatus returns a NodeToStatus with the given statuses.
func NewNodeToStatus(nodeToStatus map[string]*framework.Status, absentNodesStatus *framework.Status) *NodeToStatus {
	return &NodeToStatus{nodeToStatus: nodeToStatus, absentNodesStatus: absentNodesStatus}
}

// Get returns the status of a node, the absent-nodes status for a node never set.
func (m *NodeToStatus) Get(nodeName string) *framework.Status {
	if s, ok := m.nodeToStatus[nodeName]; ok {
		return s
	}
	return m.absentNodesStatus
}

// Set sets the status of a node.
func (m *NodeToStatus) Set(nodeName string, status *framework.Status) {
	m.nodeToStatus[nodeName] = status
}

// Len counts the nodes with their own status.
func (m *NodeToStatus) Len() int { return len(m.nodeToStatus) }

// AbsentNodesStatus is the status of every node not set.
func (m *NodeToStatus) AbsentNodesStatus() *framework.Status { return m.absentNodesStatus }

// SetAbsentNodesStatus sets the status of every node not set.
func (m *NodeToStatus) SetAbsentNodesStatus(status *framework.Status) {
	m.absentNodesStatus = status
}

// ForEachExplicitNode calls fn for each node with its own status (not for the absent nodes).
func (m *NodeToStatus) ForEachExplicitNode(fn func(nodeName string, status *framework.Status)) {
	for name, s := range m.nodeToStatus {
		fn(name, s)
	}
}

// NodesForStatusCode returns the nodes whose status has code: all of the lister's nodes
// that match when the absent nodes match too, otherwise the matching nodes set explicitly
// that the lister knows.
func (m *NodeToStatus) NodesForStatusCode(lister framework.NodeInfoLister, code framework.Code) ([]*framework.NodeInfo, error) {
	if m.absentNodesStatus.Code() == code {
		all, err := lister.List()
		if err != nil {
			return nil, err
		}
		if len(m.nodeToStatus) == 0 {
			return all, nil
		}
		var out []*framework.NodeInfo
		for _, n := range all {
			if m.Get(n.Node().Name).Code() == code {
				out = append(out, n)
			}
		}
		return out, nil
	}
	var out []*framework.NodeInfo
	for name, s := range m.nodeToStatus {
		if s.Code() != code {
			continue
		}
		if n, err := lister.Get(name); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}
