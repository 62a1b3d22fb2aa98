package endpointslice

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func slice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

func TestValidateEndpointSlice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   string
	}{
		{"valid", func(*discoveryv1.EndpointSlice) {}, ""},
		{"no address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }, "addressType: Required value"},
		{"bad address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPv5" }, `addressType: Unsupported value: "IPv5"`},
		{"ipv6 in ipv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "fd00::1" },
			`endpoints[0].addresses: Invalid value: "fd00::1": must be an IPv4 address`},
		{"no addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil },
			"endpoints[0].addresses: Required value: must contain at least 1 address"},
		{"loopback", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "127.0.0.2" },
			"may not be in the loopback range"},
		{"duplicate port name", func(s *discoveryv1.EndpointSlice) { s.Ports = append(s.Ports, s.Ports[0]) },
			`ports[1].name: Duplicate value: "http"`},
		{"no protocol", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = nil }, "ports[0].protocol: Required value"},
		{"too many endpoints", func(s *discoveryv1.EndpointSlice) {
			for range 1000 {
				s.Endpoints = append(s.Endpoints, s.Endpoints[0])
			}
		}, "endpoints: Too many: 1001: must have at most 1000 items"},
		{"bad hostname", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hostname = ptr.To("A.b") }, `endpoints[0].hostname: Invalid value: "A.b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := slice()
			tc.mutate(s)
			errs := ValidateEndpointSlice(s, nil)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
	old := slice()
	s := slice()
	s.AddressType = discoveryv1.AddressTypeIPv6
	s.Endpoints[0].Addresses[0] = "fd00::1"
	if errs := ValidateEndpointSliceUpdate(s, old); !strings.Contains(errs.ToAggregate().Error(), "addressType: Invalid value: \"IPv6\": field is immutable") {
		t.Errorf("changing the address type: %v", errs)
	}
}

func TestGeneration(t *testing.T) {
	s := slice()
	Strategy.PrepareForCreate(context.Background(), s)
	if s.Generation != 1 {
		t.Fatalf("generation %d after create, want 1", s.Generation)
	}
	same := s.DeepCopy()
	same.Annotations = map[string]string{"a": "b"}
	Strategy.PrepareForUpdate(context.Background(), same, s)
	if same.Generation != 1 {
		t.Errorf("an annotation bumped the generation to %d", same.Generation)
	}
	changed := s.DeepCopy()
	changed.Endpoints[0].Addresses[0] = "10.0.0.2"
	Strategy.PrepareForUpdate(context.Background(), changed, s)
	if changed.Generation != 2 {
		t.Errorf("an endpoint change left the generation at %d, want 2", changed.Generation)
	}
}

func TestFormatCells(t *testing.T) {
	s := slice()
	if got := formatPorts(s.Ports); got != "80" {
		t.Errorf("ports %q", got)
	}
	if got := formatPorts(nil); got != "<unset>" {
		t.Errorf("no ports %q, want <unset>", got)
	}
	for range 4 {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}})
	}
	if got := formatEndpoints(s.Endpoints); got != "10.0.0.1,10.0.0.9,10.0.0.9 + 2 more..." {
		t.Errorf("endpoints %q", got)
	}
}
