package endpoints

import corev1 "k8s.io/api/core/v1"

// SetDefaults gives ports without a protocol TCP, as upstream does.
func SetDefaults(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		ports := ep.Subsets[i].Ports
		for j := range ports {
			if ports[j].Protocol == "" {
				ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}
