package framework

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ActionType is what happened to an object in a cluster event.
type ActionType int64

// The actions, as bits, so that a plugin can register several at once.
const (
	Add ActionType = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint
	UpdateNodeCondition
	UpdateNodeAnnotation
	UpdatePodLabel
	UpdatePodScaleDown
	UpdatePodToleration
	UpdatePodSchedulingGatesEliminated
	UpdatePodGeneratedResourceClaim

	// All is every action; UpdateNodeX and UpdatePodX together make Update.
	All ActionType = 1<<iota - 1
	// Update is any update.
	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdateNodeAnnotation |
		UpdatePodLabel | UpdatePodScaleDown | UpdatePodToleration | UpdatePodSchedulingGatesEliminated | UpdatePodGeneratedResourceClaim
)

// EventResource is the kind of object an event is about.
type EventResource string

const (
	// Pod is any pod; AssignedPod a pod bound to a node; UnscheduledPod one that is not.
	Pod            EventResource = "Pod"
	AssignedPod    EventResource = "AssignedPod"
	UnscheduledPod EventResource = "UnscheduledPod"
	Node           EventResource = "Node"
	// WildCard matches every resource.
	WildCard EventResource = "*"
)

// ClusterEvent is a change in the cluster that may make pods schedulable.
type ClusterEvent struct {
	Resource   EventResource
	ActionType ActionType
	// Label names the event in metrics and logs.
	Label string
}

// Match reports whether this registered event covers event e.
func (ce ClusterEvent) Match(e ClusterEvent) bool {
	return (ce.Resource == WildCard || ce.Resource == e.Resource ||
		(ce.Resource == Pod && (e.Resource == AssignedPod || e.Resource == UnscheduledPod))) &&
		ce.ActionType&e.ActionType != 0
}

// QueueingHint is a plugin's judgement of whether an event may make a pod schedulable.
type QueueingHint int

const (
	// QueueSkip: the event cannot help this pod.
	QueueSkip QueueingHint = iota
	// Queue: it may; retry the pod.
	Queue
)

// QueueingHintFn judges one event for one rejected pod; nil means always Queue.
type QueueingHintFn func(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (QueueingHint, error)

// ClusterEventWithHint is an event a plugin registers, with its judgement.
type ClusterEventWithHint struct {
	Event          ClusterEvent
	QueueingHintFn QueueingHintFn
}
