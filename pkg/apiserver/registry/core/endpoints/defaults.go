package endpoints

import corev1 "k8s.io/api/core/v1"

// SetDefaults gives ports without a protocol TCP, as upstream does.
func SetDefaults(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}
