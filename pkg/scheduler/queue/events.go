package queue

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Labels of the queue's own events (the event label of queue_incoming_pods_total).
const (
	// ScheduleAttemptFailure: the pod came back after a failed attempt.
	ScheduleAttemptFailure = "ScheduleAttemptFailure"
	// BackoffComplete: the pod's back-off ended.
	BackoffComplete = "BackoffComplete"
	// ForceActivate: Activate asked for the pod.
	ForceActivate = "ForceActivate"
	// UnschedulableTimeout: the pod stayed in unschedulablePods longer than
	// podMaxInUnschedulablePodsDuration.
	UnschedulableTimeout = "UnschedulableTimeout"
)

// Events the queue raises itself, or that its callers raise for pods.
var (
	// EventUnschedulableTimeout moves every pod it is applied to, whatever rejected it.
	EventUnschedulableTimeout = framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All, Label: UnschedulableTimeout}
	// EventForceActivate moves every pod it is applied to, whatever rejected it.
	EventForceActivate = framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All, Label: ForceActivate}
	// EventAssignedPodAdd is a pod bound to a node appearing (AssignedPodAdded).
	EventAssignedPodAdd = framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add, Label: "AssignedPodAdd"}
	// EventUnscheduledPodAdd is a new pod entering the queue (Add).
	EventUnscheduledPodAdd = framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.Add, Label: "UnscheduledPodAdd"}
	// EventUnscheduledPodUpdate is a queued pod's own update (Update).
	EventUnscheduledPodUpdate = framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.Update, Label: "UnscheduledPodUpdate"}
)

// isWildCard reports an event that moves a pod whatever rejected it.
func isWildCard(e framework.ClusterEvent) bool {
	return e.Resource == framework.WildCard && e.ActionType == framework.All
}

// QueueingHintFunction is one plugin's judgement of one event it registered.
type QueueingHintFunction struct {
	PluginName string
	// QueueingHintFn may be nil, which means Queue.
	QueueingHintFn framework.QueueingHintFn
}

// QueueingHintMap is, for one profile, every registered event and the plugins that
// registered it. A pod rejected by plugin P is moved by event E only if P registered an
// event that matches E (ClusterEvent.Match) and P's hint for it says Queue.
type QueueingHintMap map[framework.ClusterEvent][]QueueingHintFunction

// QueueingHintMapPerProfile is a QueueingHintMap per profile (spec.schedulerName).
type QueueingHintMapPerProfile map[string]QueueingHintMap

// BuildQueueingHintMap builds a profile's QueueingHintMap from the plugins that can reject
// a pod (PreEnqueue, PreFilter, Filter, Reserve, Permit, PreBind). A plugin that does not
// implement EnqueueExtensions is taken to care about every event; one that registers no
// event is never helped by one (only by its pod's own update, or the 5-minute flush).
func BuildQueueingHintMap(ctx context.Context, plugins []framework.Plugin) (QueueingHintMap, error) {
	m := QueueingHintMap{}
	seen := map[string]bool{}
	var errs error
	for _, pl := range plugins {
		if seen[pl.Name()] {
			continue
		}
		seen[pl.Name()] = true
		ext, ok := pl.(framework.EnqueueExtensions)
		if !ok {
			all := framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All}
			m[all] = append(m[all], QueueingHintFunction{PluginName: pl.Name()})
			continue
		}
		events, err := ext.EventsToRegister(ctx)
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("plugin %s: %w", pl.Name(), err))
			continue
		}
		for _, e := range events {
			m[e.Event] = append(m[e.Event], QueueingHintFunction{PluginName: pl.Name(), QueueingHintFn: e.QueueingHintFn})
		}
	}
	if errs != nil {
		return nil, errs
	}
	return m, nil
}

// actionNames names the single action bits, in bit order.
var actionNames = []string{
	"Add", "Delete", "UpdateNodeAllocatable", "UpdateNodeLabel", "UpdateNodeTaint",
	"UpdateNodeCondition", "UpdateNodeAnnotation", "UpdatePodLabel", "UpdatePodScaleDown",
	"UpdatePodToleration", "UpdatePodSchedulingGatesEliminated", "UpdatePodGeneratedResourceClaim",
}

// eventLabel names an event for metrics and logs: its Label, or resource and action as
// kube-scheduler names them ("NodeAdd", "AssignedPodUpdate").
func eventLabel(e framework.ClusterEvent) string {
	if e.Label != "" {
		return e.Label
	}
	return string(e.Resource) + actionString(e.ActionType)
}

func actionString(a framework.ActionType) string {
	switch a {
	case framework.All:
		return "All"
	case framework.Update:
		return "Update"
	}
	var names []string
	for rest := uint64(a); rest != 0; rest &= rest - 1 {
		if i := bits.TrailingZeros64(rest); i < len(actionNames) {
			names = append(names, actionNames[i])
		}
	}
	return strings.Join(names, "|")
}
