package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// NodeInfo is a node with the pods the scheduler counts on it (bound and assumed) and what
// they add up to. The cache owns the live NodeInfos; plugins see the snapshot's copies, which
// do not change during a scheduling cycle.
type NodeInfo struct {
	node *v1.Node
	// Pods are all pods on the node.
	Pods []*PodInfo
	// PodsWithAffinity have (anti-)affinity terms of any kind; PodsWithRequiredAntiAffinity
	// have required anti-affinity terms. InterPodAffinity looks only at these.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	// UsedPorts are the host ports the pods hold.
	UsedPorts HostPortInfo
	// Requested is the sum of the pods' requests; NonZeroRequested counts defaults for pods
	// that ask for nothing (for scoring).
	Requested        *Resource
	NonZeroRequested *Resource
	// Allocatable is what the node offers.
	Allocatable *Resource
	// ImageStates are the node's images and how widespread each is in the cluster. The
	// cache replaces the map rather than changing it, so snapshots share it.
	ImageStates map[string]*ImageStateSummary
	// Generation changes with every change, so a snapshot copies only changed nodes.
	Generation int64
}

// NewNodeInfo returns a NodeInfo with pods and no node yet.
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{
		UsedPorts:        HostPortInfo{},
		Requested:        &Resource{},
		NonZeroRequested: &Resource{},
		Allocatable:      &Resource{},
		ImageStates:      map[string]*ImageStateSummary{},
		Generation:       nextGeneration(),
	}
	for _, p := range pods {
		ni.AddPod(NewPodInfo(p))
	}
	return ni
}

// Node returns the node, or nil while only its pods are known.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node and its allocatable.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Generation = nextGeneration()
}

// RemoveNode forgets the node but keeps its pods (they may still be deleted later).
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.Generation = nextGeneration()
}

// AddPod counts a pod on the node.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if hasAffinity(pi) {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
}

// RemovePod stops counting a pod.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	n.PodsWithAffinity = removeFrom(n.PodsWithAffinity, pod)
	n.PodsWithRequiredAntiAffinity = removeFrom(n.PodsWithRequiredAntiAffinity, pod)
	for i, pi := range n.Pods {
		if pi.Pod.UID == pod.UID {
			last := len(n.Pods) - 1
			n.Pods[i] = n.Pods[last]
			n.Pods[last] = nil
			n.Pods = n.Pods[:last]
			n.update(pi, -1)
			return nil
		}
	}
	return fmt.Errorf("no pod %s/%s on node %s", pod.Namespace, pod.Name, n.nodeName())
}

func (n *NodeInfo) nodeName() string {
	if n.node == nil {
		return "<unknown>"
	}
	return n.node.Name
}

func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	r := pi.Requests
	if sign > 0 {
		n.Requested.AddResource(r)
	} else {
		n.Requested.SubResource(r)
	}
	n.NonZeroRequested.MilliCPU += sign * pi.NonZeroMilliCPU
	n.NonZeroRequested.Memory += sign * pi.NonZeroMemory
	forEachHostPort(pi.Pod, func(p v1.ContainerPort) {
		if sign > 0 {
			n.UsedPorts.Add(p.HostIP, string(p.Protocol), p.HostPort)
		} else {
			n.UsedPorts.Remove(p.HostIP, string(p.Protocol), p.HostPort)
		}
	})
	n.Generation = nextGeneration()
}

// forEachHostPort calls fn for every host port of the pod's app containers and sidecars (init
// containers that keep running); plain init containers have exited by the time others run.
func forEachHostPort(pod *v1.Pod, fn func(v1.ContainerPort)) {
	visit := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				fn(p)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			visit(c)
		}
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
}

func hasAffinity(pi *PodInfo) bool {
	return len(pi.RequiredAffinityTerms) > 0 || len(pi.RequiredAntiAffinityTerms) > 0 ||
		len(pi.PreferredAffinityTerms) > 0 || len(pi.PreferredAntiAffinityTerms) > 0
}

func removeFrom(list []*PodInfo, pod *v1.Pod) []*PodInfo {
	for i, pi := range list {
		if pi.Pod.UID == pod.UID {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			return list[:last]
		}
	}
	return list
}

// Snapshot copies the NodeInfo for a scheduling cycle: the lists and sums are copied, the
// PodInfos (never changed in place) are shared.
func (n *NodeInfo) Snapshot() *NodeInfo {
	out := &NodeInfo{
		node:             n.node,
		Pods:             append([]*PodInfo(nil), n.Pods...),
		UsedPorts:        make(HostPortInfo, len(n.UsedPorts)),
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		ImageStates:      n.ImageStates,
		Generation:       n.Generation,
	}
	if len(n.PodsWithAffinity) > 0 {
		out.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		out.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	for ip, ports := range n.UsedPorts {
		m := make(map[ProtocolPort]struct{}, len(ports))
		for p := range ports {
			m[p] = struct{}{}
		}
		out.UsedPorts[ip] = m
	}
	return out
}

// Clone is Snapshot; preemption clones a snapshot's NodeInfo to try removing pods from it.
func (n *NodeInfo) Clone() *NodeInfo { return n.Snapshot() }
