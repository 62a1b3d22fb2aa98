package endpoints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name     string
		in, want []corev1.EndpointSubset
	}{
		{name: "no subsets"},
		{name: "subset without ports",
			in:   []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}}}},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}}}}},
		{name: "missing protocols become TCP in every subset, set ones are kept",
			in: []corev1.EndpointSubset{
				{Ports: []corev1.EndpointPort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "http", Port: 80}}},
				{Ports: []corev1.EndpointPort{{Port: 443}, {Port: 9, Protocol: corev1.ProtocolSCTP}}},
			},
			want: []corev1.EndpointSubset{
				{Ports: []corev1.EndpointPort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
				{Ports: []corev1.EndpointPort{{Port: 443, Protocol: corev1.ProtocolTCP}, {Port: 9, Protocol: corev1.ProtocolSCTP}}},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep := &corev1.Endpoints{Subsets: tc.in}
			SetDefaults(ep)
			if !apiequality.Semantic.DeepEqual(ep.Subsets, tc.want) {
				t.Errorf("subsets = %+v, want %+v", ep.Subsets, tc.want)
			}
		})
	}
}
