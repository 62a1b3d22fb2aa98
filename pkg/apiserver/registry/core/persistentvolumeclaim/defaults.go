package persistentvolumeclaim

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// SetDefaults gives a claim upstream's v1 defaults: Pending, a Filesystem volume, and every
// quantity of its requests, limits, capacity and allocation rounded up to milli-units.
// StatefulSets' claim templates are defaulted with it too, as upstream's are.
func SetDefaults(c *corev1.PersistentVolumeClaim) {
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
	if c.Spec.VolumeMode == nil {
		c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	RoundUpQuantities(c.Spec.Resources.Limits, c.Spec.Resources.Requests, c.Status.Capacity, c.Status.AllocatedResources)
}

// RoundUpQuantities rounds every quantity of the lists up to milli-units in place, as
// upstream's ResourceList defaulting does (finer values are kept from reaching storage).
func RoundUpQuantities(lists ...corev1.ResourceList) {
	for _, list := range lists {
		for name, q := range list {
			q.RoundUp(-3)
			list[name] = q
		}
	}
}
