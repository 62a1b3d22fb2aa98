// Package prioritysort is the PrioritySort plugin, the QueueSort step: it orders activeQ so
// that scheduleOne pops the pod of highest priority first, and among equals the one that
// entered the queue first.
package prioritysort

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "PrioritySort"

// PrioritySort orders pods by spec.priority, then by queue timestamp.
type PrioritySort struct{}

var _ framework.QueueSortPlugin = &PrioritySort{}

// New returns the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &PrioritySort{}, nil
}

// Name returns Name.
func (pl *PrioritySort) Name() string { return Name }

// Less reports whether a goes before b: higher priority first (a pod without spec.priority
// counts as 0), then the earlier Timestamp.
func (pl *PrioritySort) Less(a, b *framework.QueuedPodInfo) bool {
	pa, pb := corev1helpers.PodPriority(a.Pod), corev1helpers.PodPriority(b.Pod)
	return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
}
