package endpoints

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidateEndpoints(t *testing.T) {
	good := func() *corev1.Endpoints {
		return &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1", Hostname: "a", NodeName: ptr.To("node-1")}},
				Ports:     []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			}},
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Endpoints)
		want   string // "" for valid
	}{
		{"valid", func(*corev1.Endpoints) {}, ""},
		{"no addresses", func(e *corev1.Endpoints) { e.Subsets[0].Addresses = nil },
			"subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"},
		{"loopback", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "127.0.0.1" },
			`subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`},
		{"link-local", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "169.254.1.1" },
			`may not be in the link-local range (169.254.0.0/16, fe80::/10)`},
		{"not an IP", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "web" },
			`subsets[0].addresses[0].ip: Invalid value: "web": must be a valid IP address`},
		{"unnamed ports", func(e *corev1.Endpoints) {
			e.Subsets[0].Ports = []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 81, Protocol: corev1.ProtocolTCP}}
		}, "subsets[0].ports[0].name: Required value"},
		{"bad protocol", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Protocol = "ICMP" },
			`subsets[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`},
		{"port zero", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Port = 0 },
			"subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{"bad hostname", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].Hostname = "A_b" },
			`subsets[0].addresses[0].hostname: Invalid value: "A_b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := good()
			tc.mutate(ep)
			errs := ValidateEndpoints(ep, nil)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
	// An update that keeps invalid subsets as they were is not refused for them.
	old := good()
	old.Subsets[0].Addresses[0].IP = "127.0.0.1"
	updated := old.DeepCopy()
	updated.Labels = map[string]string{"a": "b"}
	if errs := ValidateEndpoints(updated, old); len(errs) > 0 {
		t.Errorf("unchanged subsets checked again: %v", errs)
	}
}

func TestFormat(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ep   corev1.Endpoints
		want string
	}{
		{"none", corev1.Endpoints{}, "<none>"},
		{"two", corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{{Port: 80}}}}}, "10.0.0.1:80,10.0.0.2:80"},
		{"more", corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"), Ports: []corev1.EndpointPort{{Port: 80}}}}}, "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more..."},
		{"headless without ports", corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1")}}}, "10.0.0.1"},
		{"ipv6", corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Addresses: addrs("fd00::1"), Ports: []corev1.EndpointPort{{Port: 443}}}}}, "[fd00::1]:443"},
		{"only not ready", corev1.Endpoints{Subsets: []corev1.EndpointSubset{{NotReadyAddresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{{Port: 80}}}}}, "<none>"},
	} {
		if got := Format(&tc.ep); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
