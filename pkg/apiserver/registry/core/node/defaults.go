package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// SetDefaults fills in what upstream gives a node between decoding and validation.
//
//   - spec.podCIDR and spec.podCIDRs agree. Upstream gets this from the round trip through
//     its internal type, which has only the list; berth stores the v1 type, so it does the
//     same here: a podCIDR that differs from podCIDRs[0] wins, for older clients that
//     only know the single field.
//   - status.allocatable is status.capacity when the node reports no allocatable.
//   - capacity and allocatable are rounded up to milli precision (upstream keeps this for
//     compatibility rather than rejecting finer values).
func SetDefaults(node *corev1.Node) {
	spec := &node.Spec
	switch {
	case spec.PodCIDR != "" && (len(spec.PodCIDRs) == 0 || spec.PodCIDRs[0] != spec.PodCIDR):
		spec.PodCIDRs = []string{spec.PodCIDR}
	case len(spec.PodCIDRs) > 0:
		spec.PodCIDR = spec.PodCIDRs[0]
	}

	status := &node.Status
	if status.Allocatable == nil && status.Capacity != nil {
		status.Allocatable = status.Capacity.DeepCopy()
	}
	roundUpToMilli(status.Capacity)
	roundUpToMilli(status.Allocatable)
}

func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}
