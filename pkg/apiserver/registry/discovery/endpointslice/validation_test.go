package endpointslice

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
)

func errorTexts(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// assertErrors checks errs against want in order: each want is the start of the error's
// text ("path: Type: value: detail"), so that long standard messages need only their head.
func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	ok := len(errs) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.HasPrefix(errs[i].Error(), want[i])
	}
	if !ok {
		t.Errorf("errors:\n got %q\nwant %q", errorTexts(errs), want)
	}
}

// assertExactErrors checks errs against want in order, whole texts.
func assertExactErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := errorTexts(errs)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i] == want[i]
	}
	if !ok {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func sliceForValidation(mutate ...func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hello", Namespace: "world", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.1.2.3"},
			Hostname:   ptr.To("valid-123"),
			NodeName:   ptr.To("node-1"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func withType(t discoveryv1.AddressType, addrs ...string) func(*discoveryv1.EndpointSlice) {
	return func(s *discoveryv1.EndpointSlice) {
		s.AddressType = t
		s.Endpoints[0].Addresses = addrs
	}
}

func withEndpoint(mutate func(*discoveryv1.Endpoint)) func(*discoveryv1.EndpointSlice) {
	return func(s *discoveryv1.EndpointSlice) { mutate(&s.Endpoints[0]) }
}

func withPorts(ports ...discoveryv1.EndpointPort) func(*discoveryv1.EndpointSlice) {
	return func(s *discoveryv1.EndpointSlice) { s.Ports = ports }
}

func port(name string, protocol corev1.Protocol) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To[int32](80), Protocol: ptr.To(protocol)}
}

func ips(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
	}
	return out
}

func namedPorts(n int) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, n)
	for i := range out {
		out[i] = port(fmt.Sprintf("http-%d", i), corev1.ProtocolTCP)
	}
	return out
}

// requiredAddresses are the declared rule's errors for n endpoints without addresses.
func requiredAddresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("endpoints[%d].addresses: Required value", i)
	}
	return out
}

func topology(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("key%d", i)] = "value"
	}
	return out
}

func zones(names ...string) *discoveryv1.EndpointHints {
	h := &discoveryv1.EndpointHints{}
	for _, n := range names {
		h.ForZones = append(h.ForZones, discoveryv1.ForZone{Name: n})
	}
	return h
}

func nodes(names ...string) *discoveryv1.EndpointHints {
	h := &discoveryv1.EndpointHints{}
	for _, n := range names {
		h.ForNodes = append(h.ForNodes, discoveryv1.ForNode{Name: n})
	}
	return h
}

const (
	invalidIP  = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
	labelMsg   = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"
	dns1123Sub = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"
	qualified  = "name part must consist of alphanumeric characters, '-', '_' or '.'"
)

// The cases are upstream's (pkg/apis/discovery/validation: TestValidateEndpointSlice and
// TestValidateEndpointSliceCreate), with its messages; StrictIPCIDRValidation is on.
func TestValidateEndpointSliceCreate(t *testing.T) {
	tests := []struct {
		name string
		s    *discoveryv1.EndpointSlice
		want []string
	}{
		{name: "valid", s: sliceForValidation()},
		{name: "IPv6", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv6, "2001:db8::1"))},
		{name: "FQDNs", s: sliceForValidation(withType(discoveryv1.AddressTypeFQDN, "foo.example.com", "example.com", "example.com."))},
		{name: "every protocol", s: sliceForValidation(withPorts(port("tcp", "TCP"), port("udp", "UDP"), port("sctp", "SCTP")))},
		{name: "appProtocols", s: sliceForValidation(withPorts(
			discoveryv1.EndpointPort{Name: ptr.To("one"), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("HTTP")},
			discoveryv1.EndpointPort{Name: ptr.To("two"), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("https")},
			discoveryv1.EndpointPort{Name: ptr.To("three"), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("my-protocol")},
			discoveryv1.EndpointPort{Name: ptr.To("four"), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("example.com/custom-protocol")},
		))},
		{name: "one unnamed port", s: sliceForValidation(withPorts(port("", "TCP")))},
		{name: "63-character port name", s: sliceForValidation(withPorts(port(strings.Repeat("a", 63), "TCP")))},
		{name: "no ports and no endpoints", s: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Ports, s.Endpoints = nil, nil })},
		{name: "1000 endpoints", s: sliceForValidation(func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = nil
			for _, ip := range ips(1000) {
				s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
			}
		})},
		{name: "20000 ports", s: sliceForValidation(withPorts(namedPorts(20000)...))},
		{name: "100 addresses", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = ips(100) }))},
		{name: "16 topology labels", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.DeprecatedTopology = topology(16) }))},
		{name: "hints", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) {
			ep.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}, ForNodes: []discoveryv1.ForNode{{Name: "node-1"}}}
		}))},

		{name: "duplicate port name", s: sliceForValidation(withPorts(port("http", "TCP"), port("http", "UDP"))),
			want: []string{`ports[1].name: Duplicate value: "http"`}},
		{name: "two unnamed ports", s: sliceForValidation(withPorts(port("", "TCP"), port("", "UDP"))),
			want: []string{`ports[1].name: Duplicate value: ""`}},
		{name: "port name with capitals", s: sliceForValidation(withPorts(port("aCapital", "TCP"))),
			want: []string{`ports[0].name: Invalid value: "aCapital": ` + labelMsg}},
		{name: "port name with bad characters", s: sliceForValidation(withPorts(port("almost_valid", "TCP"))),
			want: []string{`ports[0].name: Invalid value: "almost_valid": ` + labelMsg}},
		{name: "64-character port name", s: sliceForValidation(withPorts(port(strings.Repeat("a", 64), "TCP"))),
			want: []string{`ports[0].name: Invalid value: "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`}},
		{name: "unsupported protocol", s: sliceForValidation(withPorts(port("http", "foo"))),
			want: []string{`ports[0].protocol: Unsupported value: "foo": supported values: "SCTP", "TCP", "UDP"`}},
		{name: "no protocol", s: sliceForValidation(withPorts(discoveryv1.EndpointPort{Name: ptr.To("http")})),
			want: []string{"ports[0].protocol: Required value"}},
		{name: "bad appProtocol", s: sliceForValidation(withPorts(discoveryv1.EndpointPort{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), AppProtocol: ptr.To("--")})),
			want: []string{`ports[0].appProtocol: Invalid value: "--": ` + qualified}},
		{name: "20001 ports", s: sliceForValidation(withPorts(namedPorts(20001)...)),
			want: []string{"ports: Too many: 20001: must have at most 20000 items"}},
		{name: "1001 endpoints", s: sliceForValidation(func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = make([]discoveryv1.Endpoint, 1001) // not looked into: the count alone is refused
		}), want: []string{"endpoints: Too many: 1001: must have at most 1000 items"}},
		{name: "no addresses", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = nil })),
			want: []string{"endpoints[0].addresses: Required value: must contain at least 1 address"}},
		{name: "101 addresses", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = ips(101) })),
			want: []string{"endpoints[0].addresses: Too many: 101: must have at most 100 items"}},
		{name: "bad topology key", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.DeprecatedTopology = map[string]string{"--INVALID": "example"} })),
			want: []string{`endpoints[0].deprecatedTopology: Invalid value: "--INVALID": ` + qualified}},
		{name: "17 topology labels", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.DeprecatedTopology = topology(17) })),
			want: []string{"endpoints[0].deprecatedTopology: Too many: 17: must have at most 16 items"}},
		// v1beta1 moved the zone out of topology; a v1 object cannot have it there.
		{name: "zone in topology", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) {
			ep.DeprecatedTopology = map[string]string{corev1.LabelTopologyZone: "zone1"}
		})), want: []string{"endpoints[0].deprecatedTopology[topology.kubernetes.io/zone]: Internal error: reserved key was not removed in conversion"}},
		{name: "bad hostname", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Hostname = ptr.To("--INVALID") })),
			want: []string{`endpoints[0].hostname: Invalid value: "--INVALID": ` + labelMsg}},
		{name: "bad nodeName", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.NodeName = ptr.To("INvalid-node-name") })),
			want: []string{`endpoints[0].nodeName: Invalid value: "INvalid-node-name": ` + dns1123Sub}},
		{name: "bad name", s: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Name = "--INVALID" }),
			want: []string{`metadata.name: Invalid value: "--INVALID": ` + dns1123Sub}},
		{name: "non-standard finalizer", s: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Finalizers = []string{"mine"} }),
			want: []string{`metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`}},
		{name: "not an IP", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "123.456.789.012")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "123.456.789.012": ` + invalidIP}},
		{name: "leading zeros", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "012.034.056.078")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "012.034.056.078": must not have leading 0s`}},
		// A family mismatch is reported on the list, as upstream does.
		{name: "IPv6 in an IPv4 slice", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "123.456.789.012", "2001:4860:4860::8888")),
			want: []string{
				`endpoints[0].addresses[0]: Invalid value: "123.456.789.012": ` + invalidIP,
				`endpoints[0].addresses: Invalid value: "2001:4860:4860::8888": must be an IPv4 address`,
			}},
		{name: "IPv4 in an IPv6 slice", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv6, "10.0.0.1", "2001:4860:4860:defg")),
			want: []string{
				`endpoints[0].addresses: Invalid value: "10.0.0.1": must be an IPv6 address`,
				`endpoints[0].addresses[1]: Invalid value: "2001:4860:4860:defg": ` + invalidIP,
			}},
		// IPv6 addresses were strict from the start: canonical form only.
		{name: "IPv6 not canonical", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv6, "2001:db8:0::1")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "2001:db8:0::1": must be in canonical form ("2001:db8::1")`}},
		{name: "IPv4-mapped IPv6 in an IPv6 slice", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv6, "::ffff:1.2.3.4")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "::ffff:1.2.3.4": must not be an IPv4-mapped IPv6 address`}},
		{name: "loopback", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "127.0.0.1")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`}},
		{name: "IPv6 link-local", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv6, "fe80::9656:d028:8652:66b6")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "fe80::9656:d028:8652:66b6": may not be in the link-local range (169.254.0.0/16, fe80::/10)`}},
		{name: "unspecified", s: sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "0.0.0.0")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)`}},
		{name: "bad FQDNs", s: sliceForValidation(withType(discoveryv1.AddressTypeFQDN, "foo.*", "FOO.example.com", "underscores_are_bad.example.com", "*.example.com")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "foo.*"`, `endpoints[0].addresses[1]: Invalid value: "FOO.example.com"`,
				`endpoints[0].addresses[2]: Invalid value: "underscores_are_bad.example.com"`, `endpoints[0].addresses[3]: Invalid value: "*.example.com"`}},
		{name: "bad zone hint", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Hints = zones("inv@lid") })),
			want: []string{`endpoints[0].hints.forZones[0].name: Invalid value: "inv@lid": a valid label must be an empty string or consist of alphanumeric characters`}},
		{name: "repeated zone hint", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Hints = zones("zone-a", "zone-b", "zone-a") })),
			want: []string{`endpoints[0].hints.forZones[2].name: Duplicate value: "zone-a"`}},
		{name: "9 zone hints", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) {
			ep.Hints = zones("a", "b", "c", "d", "e", "f", "g", "h", "i")
		})), want: []string{"endpoints[0].hints.forZones: Too many: 9: must have at most 8 items"}},
		{name: "bad node hints", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Hints = nodes("!@#$!@", "") })),
			want: []string{`endpoints[0].hints.forNodes[0].name: Invalid value: "!@#$!@": ` + dns1123Sub, `endpoints[0].hints.forNodes[1].name: Invalid value: "": ` + dns1123Sub}},
		{name: "repeated node hint", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Hints = nodes("node-1", "node-2", "node-1") })),
			want: []string{`endpoints[0].hints.forNodes[2].name: Duplicate value: "node-1"`}},
		{name: "9 node hints", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) {
			ep.Hints = nodes("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9")
		})), want: []string{"endpoints[0].hints.forNodes: Too many: 9: must have at most 8 items"}},
		// The deprecated "IP" type of v1alpha1 is refused like any other.
		{name: "IP address type", s: sliceForValidation(withType("IP", "10.1.2.3")),
			want: []string{`addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"`}},
		{name: "unknown address type: addresses not checked", s: sliceForValidation(withType("other", "not an address")),
			want: []string{`addressType: Unsupported value: "other": supported values: "FQDN", "IPv4", "IPv6"`}},
		{name: "empty everything", s: &discoveryv1.EndpointSlice{},
			want: []string{"metadata.name: Required value: name or generateName is required", "metadata.namespace: Required value", "addressType: Required value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidateEndpointSliceCreate(tc.s), tc.want)
		})
	}
}

// The cases are upstream's (TestValidateEndpointSliceUpdate).
func TestValidateEndpointSliceUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *discoveryv1.EndpointSlice
		want     []string
	}{
		{name: "unchanged", old: sliceForValidation(), new: sliceForValidation()},
		{name: "unchanged legacy addresses are not checked again",
			old: sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "10.1.2.04")),
			new: sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "10.1.2.04"), func(s *discoveryv1.EndpointSlice) { s.Labels["a"] = "b" })},
		{name: "changed ones are",
			old:  sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "10.1.2.3")),
			new:  sliceForValidation(withType(discoveryv1.AddressTypeIPv4, "10.1.2.03")),
			want: []string{`endpoints[0].addresses[0]: Invalid value: "10.1.2.03": must not have leading 0s`}},
		{name: "invalid nodeName set", old: sliceForValidation(),
			new:  sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.NodeName = ptr.To("INVALID foo") })),
			want: []string{`endpoints[0].nodeName: Invalid value: "INVALID foo"`}},
		{name: "unsupported type kept", old: sliceForValidation(withType("IP", "10.1.2.3")), new: sliceForValidation(withType("IP", "10.1.2.3")),
			want: []string{`addressType: Unsupported value: "IP"`}},
		{name: "type changed", old: sliceForValidation(withType("other", "10.1.2.3")), new: sliceForValidation(),
			want: []string{`addressType: Invalid value: "IPv4": field is immutable`}},
		{name: "bad ports", old: sliceForValidation(), new: sliceForValidation(withPorts(port("", "invalid"))),
			want: []string{`ports[0].protocol: Unsupported value: "invalid"`}},
		// The generic store checks the metadata of updates; upstream's function does not.
		{name: "rename is the store's business", old: sliceForValidation(), new: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Name = "other" })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidateEndpointSliceUpdate(tc.new, tc.old), tc.want)
		})
	}
}

// What a client gets from kube-apiserver v1.37: the generic store's checks, the handwritten
// validation, and the declared rules merged in (declarative.go), run by the library functions
// the store itself calls. Texts are whole.
func TestValidationAsServed(t *testing.T) {
	ctx := context.Background()
	t.Run("create", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			s    *discoveryv1.EndpointSlice
			want []string
		}{
			{name: "valid", s: sliceForValidation()},
			{name: "no addresses: the declared rule's bare text", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = nil })),
				want: []string{"endpoints[0].addresses: Required value"}},
			{name: "101 addresses: the same text either way", s: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = ips(101) })),
				want: []string{"endpoints[0].addresses: Too many: 101: must have at most 100 items"}},
			{name: "declared rules' errors come last",
				s: sliceForValidation(withType("IPv5"), withPorts(port("http", "foo"))),
				want: []string{
					`ports[0].protocol: Unsupported value: "foo": supported values: "SCTP", "TCP", "UDP"`,
					`addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"`,
					"endpoints[0].addresses: Required value",
				}},
			{name: "no type", s: &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b"}},
				want: []string{"addressType: Required value"}},
			// The handwritten check stops at the count; the declared rules look into each endpoint.
			{name: "1001 endpoints without addresses", s: sliceForValidation(func(s *discoveryv1.EndpointSlice) {
				s.Endpoints = make([]discoveryv1.Endpoint, 1001)
			}), want: append([]string{"endpoints: Too many: 1001: must have at most 1000 items"}, requiredAddresses(1001)...)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				assertExactErrors(t, rest.ValidateCreate(ctx, tc.s, Strategy), tc.want)
			})
		}
	})
	t.Run("update", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			old, new *discoveryv1.EndpointSlice
			want     []string
		}{
			{name: "unchanged", old: sliceForValidation(), new: sliceForValidation()},
			{name: "type changed: the declared rule's value-less text",
				old: sliceForValidation(), new: sliceForValidation(withType(discoveryv1.AddressTypeIPv6, "2001:db8::1")),
				want: []string{"addressType: Invalid value: null: field is immutable"}},
			{name: "type emptied: required and immutable, both declared",
				old: sliceForValidation(), new: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }),
				want: []string{"addressType: Required value", "addressType: Invalid value: null: field is immutable"}},
			// The enum is not checked after immutable failed, so the handwritten error stays.
			{name: "type changed to an unknown one",
				old: sliceForValidation(), new: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPv5" }),
				want: []string{`addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"`, "addressType: Invalid value: null: field is immutable"}},
			{name: "addresses emptied",
				old: sliceForValidation(), new: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = nil })),
				want: []string{"endpoints[0].addresses: Required value"}},
			{name: "endpoints an older release took, left as they were",
				old: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = nil })),
				new: sliceForValidation(withEndpoint(func(ep *discoveryv1.Endpoint) { ep.Addresses = nil }), func(s *discoveryv1.EndpointSlice) { s.Labels["a"] = "b" })},
			// Unchanged data is skipped for the list as a whole, not endpoint by endpoint.
			{name: "an endpoint left as it was is checked again when another changed",
				old: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{}) }),
				new: sliceForValidation(func(s *discoveryv1.EndpointSlice) {
					s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{})
					s.Endpoints[0].Addresses = []string{"10.1.2.4"}
				}),
				want: []string{"endpoints[1].addresses: Required value"}},
			{name: "type and endpoints left as they were",
				old: sliceForValidation(withType("IP", "10.1.2.3"), func(s *discoveryv1.EndpointSlice) { s.Endpoints = make([]discoveryv1.Endpoint, 1001) }),
				new: sliceForValidation(withType("IP", "10.1.2.3"), func(s *discoveryv1.EndpointSlice) {
					s.Endpoints = make([]discoveryv1.Endpoint, 1001)
					s.Labels["a"] = "b"
				}),
				want: []string{`addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"`}},
			{name: "renamed: reported once",
				old: sliceForValidation(), new: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Name = "other" }),
				want: []string{`metadata.name: Invalid value: "other": field is immutable`}},
			{name: "bad labels: reported once, though both the store and the strategy find them",
				old: sliceForValidation(), new: sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Labels["a b"] = "c" }),
				want: []string{`metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				assertExactErrors(t, rest.ValidateUpdate(ctx, tc.new, tc.old, Strategy), tc.want)
			})
		}
	})
}
