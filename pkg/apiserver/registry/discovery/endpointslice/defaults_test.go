package endpointslice

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name     string
		in, want []discoveryv1.EndpointPort
	}{
		{name: "no ports"},
		{name: "name and protocol filled in",
			in:   []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}},
			want: []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}}},
		{name: "set values kept",
			in:   []discoveryv1.EndpointPort{{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)}},
			want: []discoveryv1.EndpointPort{{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)}}},
		// A port without a number stands for all ports; defaulting leaves it so.
		{name: "every port",
			in:   []discoveryv1.EndpointPort{{Name: ptr.To("a")}, {Protocol: ptr.To(corev1.ProtocolSCTP)}},
			want: []discoveryv1.EndpointPort{{Name: ptr.To("a"), Protocol: ptr.To(corev1.ProtocolTCP)}, {Name: ptr.To(""), Protocol: ptr.To(corev1.ProtocolSCTP)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &discoveryv1.EndpointSlice{Ports: tc.in}
			SetDefaults(s)
			if !apiequality.Semantic.DeepEqual(s.Ports, tc.want) {
				t.Errorf("ports = %+v, want %+v", s.Ports, tc.want)
			}
		})
	}
}

// Each port gets values of its own: a later change to one must not show in another.
func TestSetDefaultsDoesNotShare(t *testing.T) {
	s := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{}, {}}}
	SetDefaults(s)
	*s.Ports[0].Name = "changed"
	*s.Ports[0].Protocol = corev1.ProtocolUDP
	if *s.Ports[1].Name != "" || *s.Ports[1].Protocol != corev1.ProtocolTCP {
		t.Errorf("second port changed with the first: %+v", s.Ports[1])
	}
}
