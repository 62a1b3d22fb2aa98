package namespace

import (
	corev1 "k8s.io/api/core/v1"
)

// SetDefaults fills in what upstream's defaulting gives a namespace: the
// kubernetes.io/metadata.name label, so that selectors can pick a namespace by its name,
// and phase Active.
func SetDefaults(ns *corev1.Namespace) {
	// A namespace created with generateName has no name yet at this point; the strategy
	// labels it once the name is known.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}
