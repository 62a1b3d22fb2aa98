package endpoints

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// assertErrors checks errs against want in order: each want is the start of the error's
// text ("path: Type: value: detail"), so that long standard messages need only their head.
func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	ok := len(errs) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.HasPrefix(errs[i].Error(), want[i])
	}
	if !ok {
		got := make([]string, 0, len(errs))
		for _, e := range errs {
			got = append(got, e.Error())
		}
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func endpointsForValidation(mutate ...func(*corev1.Endpoints)) *corev1.Endpoints {
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "mysvc", Namespace: "namespace", ResourceVersion: "1"},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.10.1.1", Hostname: "a", NodeName: ptr.To("node-1")}},
			Ports:     []corev1.EndpointPort{{Name: "a", Port: 8675, Protocol: corev1.ProtocolTCP}},
		}},
	}
	for _, m := range mutate {
		m(ep)
	}
	return ep
}

func withIP(ip string) func(*corev1.Endpoints) {
	return func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses[0].IP = ip }
}

func withPorts(ports ...corev1.EndpointPort) func(*corev1.Endpoints) {
	return func(ep *corev1.Endpoints) { ep.Subsets[0].Ports = ports }
}

const (
	invalidIP  = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
	labelMsg   = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"
	dns1123Sub = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"
)

// The cases are upstream's (pkg/apis/core/validation: TestValidateEndpointsCreate) and its
// messages, with StrictIPCIDRValidation on as it is by default.
func TestValidateEndpointsCreate(t *testing.T) {
	tests := []struct {
		name string
		ep   *corev1.Endpoints
		want []string
	}{
		{name: "valid", ep: endpointsForValidation()},
		{name: "two subsets, named ports", ep: endpointsForValidation(func(ep *corev1.Endpoints) {
			ep.Subsets = []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.10.1.1"}, {IP: "10.10.2.2"}},
				Ports:     []corev1.EndpointPort{{Name: "a", Port: 8675, Protocol: "TCP"}, {Name: "b", Port: 309, Protocol: "TCP"}},
			}, {
				Addresses: []corev1.EndpointAddress{{IP: "fd00::3"}},
				Ports:     []corev1.EndpointPort{{Name: "a", Port: 93, Protocol: "UDP"}, {Name: "b", Port: 76, Protocol: "SCTP"}},
			}}
		})},
		{name: "no subsets", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Subsets = nil })},
		{name: "a single port needs no name", ep: endpointsForValidation(withPorts(corev1.EndpointPort{Port: 8675, Protocol: "TCP"}))},
		{name: "headless: no ports", ep: endpointsForValidation(withPorts())},
		{name: "only not-ready addresses", ep: endpointsForValidation(func(ep *corev1.Endpoints) {
			ep.Subsets[0].NotReadyAddresses, ep.Subsets[0].Addresses = ep.Subsets[0].Addresses, nil
		})},
		{name: "valid appProtocol", ep: endpointsForValidation(withPorts(corev1.EndpointPort{Port: 80, Protocol: "TCP", AppProtocol: ptr.To("kubernetes.io/h2c")}))},

		{name: "missing namespace", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Namespace = "" }),
			want: []string{"metadata.namespace: Required value"}},
		{name: "missing name", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Name = "" }),
			want: []string{"metadata.name: Required value: name or generateName is required"}},
		{name: "invalid name", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Name = "-_Invliad^&Characters" }),
			want: []string{`metadata.name: Invalid value: "-_Invliad^&Characters": ` + dns1123Sub}},
		{name: "non-standard finalizer", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Finalizers = []string{"mine"} }),
			want: []string{`metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`}},
		{name: "subset without addresses", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses = nil }),
			want: []string{"subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"}},
		// Both checks report an address that does not parse, as upstream's do.
		{name: "bracketed IPv6", ep: endpointsForValidation(withIP("[2001:0db8:85a3:0042:1000:8a2e:0370:7334]")),
			want: []string{
				`subsets[0].addresses[0].ip: Invalid value: "[2001:0db8:85a3:0042:1000:8a2e:0370:7334]": ` + invalidIP,
				`subsets[0].addresses[0].ip: Invalid value: "[2001:0db8:85a3:0042:1000:8a2e:0370:7334]": must be a valid IP address`,
			}},
		{name: "missing IP", ep: endpointsForValidation(withIP("")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "": ` + invalidIP, `subsets[0].addresses[0].ip: Invalid value: "": must be a valid IP address`}},
		// Leading zeros parse (sloppily) as 1.2.3.4, which is not special: one error only.
		{name: "leading zeros", ep: endpointsForValidation(withIP("001.002.003.004")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "001.002.003.004": must not have leading 0s`}},
		{name: "IPv4-mapped IPv6", ep: endpointsForValidation(withIP("::ffff:10.10.3.3")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "::ffff:10.10.3.3": must not be an IPv4-mapped IPv6 address`}},
		{name: "unspecified", ep: endpointsForValidation(withIP("0.0.0.0")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)`}},
		{name: "loopback", ep: endpointsForValidation(withIP("127.0.0.1")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`}},
		{name: "IPv6 loopback", ep: endpointsForValidation(withIP("::1")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)`}},
		{name: "link-local", ep: endpointsForValidation(withIP("169.254.169.254")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)`}},
		{name: "IPv6 link-local", ep: endpointsForValidation(withIP("fe80::1")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)`}},
		{name: "link-local multicast", ep: endpointsForValidation(withIP("224.0.0.1")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "224.0.0.1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)`}},
		{name: "not-ready addresses are checked too", ep: endpointsForValidation(func(ep *corev1.Endpoints) {
			ep.Subsets[0].NotReadyAddresses = []corev1.EndpointAddress{{IP: "127.0.0.2"}}
		}), want: []string{`subsets[0].notReadyAddresses[0].ip: Invalid value: "127.0.0.2": may not be in the loopback range`}},
		{name: "bad hostname", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses[0].Hostname = "A_b" }),
			want: []string{`subsets[0].addresses[0].hostname: Invalid value: "A_b": ` + labelMsg}},
		{name: "bad nodeName", ep: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses[0].NodeName = ptr.To("Node_1") }),
			want: []string{`subsets[0].addresses[0].nodeName: Invalid value: "Node_1": ` + dns1123Sub}},
		{name: "several ports, one without a name",
			ep:   endpointsForValidation(withPorts(corev1.EndpointPort{Port: 8675, Protocol: "TCP"}, corev1.EndpointPort{Name: "b", Port: 309, Protocol: "TCP"})),
			want: []string{"subsets[0].ports[0].name: Required value"}},
		{name: "bad port name", ep: endpointsForValidation(withPorts(corev1.EndpointPort{Name: "HTTP", Port: 80, Protocol: "TCP"})),
			want: []string{`subsets[0].ports[0].name: Invalid value: "HTTP": ` + labelMsg}},
		{name: "port out of range", ep: endpointsForValidation(withPorts(corev1.EndpointPort{Name: "a", Port: 66000, Protocol: "TCP"})),
			want: []string{"subsets[0].ports[0].port: Invalid value: 66000: must be between 1 and 65535, inclusive"}},
		{name: "port missing", ep: endpointsForValidation(withPorts(corev1.EndpointPort{Name: "a", Protocol: "TCP"})),
			want: []string{"subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
		{name: "unsupported protocol", ep: endpointsForValidation(withPorts(corev1.EndpointPort{Name: "a", Port: 93, Protocol: "Protocol"})),
			want: []string{`subsets[0].ports[0].protocol: Unsupported value: "Protocol": supported values: "SCTP", "TCP", "UDP"`}},
		{name: "protocol missing", ep: endpointsForValidation(withPorts(corev1.EndpointPort{Name: "a", Port: 93})),
			want: []string{"subsets[0].ports[0].protocol: Required value"}},
		{name: "bad appProtocol",
			ep:   endpointsForValidation(withPorts(corev1.EndpointPort{Name: "p", Port: 93, Protocol: "TCP", AppProtocol: ptr.To("lots-of[invalid]-{chars}")})),
			want: []string{`subsets[0].ports[0].appProtocol: Invalid value: "lots-of[invalid]-{chars}": name part must consist of alphanumeric characters`}},
		{name: "errors in order: metadata, then each subset's addresses and ports", ep: endpointsForValidation(func(ep *corev1.Endpoints) {
			ep.Namespace = ""
			ep.Subsets = append(ep.Subsets, corev1.EndpointSubset{
				Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}},
				Ports:     []corev1.EndpointPort{{Name: "a", Port: 0, Protocol: "TCP"}},
			})
		}), want: []string{"metadata.namespace: Required value", "subsets[1].addresses[0].ip: Invalid value", "subsets[1].ports[0].port: Invalid value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidateEndpointsCreate(tc.ep), tc.want)
		})
	}
}

func TestValidateEndpointsUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *corev1.Endpoints
		want     []string
	}{
		{name: "unchanged", old: endpointsForValidation(), new: endpointsForValidation()},
		{name: "to a valid appProtocol", old: endpointsForValidation(),
			new: endpointsForValidation(withPorts(corev1.EndpointPort{Name: "a", Port: 8675, Protocol: "TCP", AppProtocol: ptr.To("https")}))},
		{name: "to an invalid appProtocol", old: endpointsForValidation(),
			new:  endpointsForValidation(withPorts(corev1.EndpointPort{Name: "a", Port: 8675, Protocol: "TCP", AppProtocol: ptr.To("~https")})),
			want: []string{`subsets[0].ports[0].appProtocol: Invalid value: "~https"`}},
		{name: "an address moves to another node", old: endpointsForValidation(),
			new: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses[0].NodeName = ptr.To("node-2") })},
		// Data an older release took stays as it is while the rest of the object changes.
		{name: "unchanged legacy subsets are not checked again", old: endpointsForValidation(withIP("010.0.0.1")),
			new: endpointsForValidation(withIP("010.0.0.1"), func(ep *corev1.Endpoints) { ep.Labels = map[string]string{"a": "b"} })},
		{name: "changed subsets are", old: endpointsForValidation(withIP("010.0.0.1")),
			new:  endpointsForValidation(withIP("010.0.0.2")),
			want: []string{`subsets[0].addresses[0].ip: Invalid value: "010.0.0.2": must not have leading 0s`}},
		{name: "rename", old: endpointsForValidation(), new: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Name = "other" }),
			want: []string{`metadata.name: Invalid value: "other": field is immutable`}},
		{name: "no resourceVersion", old: endpointsForValidation(), new: endpointsForValidation(func(ep *corev1.Endpoints) { ep.ResourceVersion = "" }),
			want: []string{`metadata.resourceVersion: Invalid value: "": must be specified for an update`}},
		// Upstream checks finalizers in both its metadata functions; the API server's merge
		// reports the pair once (see TestStrategyValidationAsServed).
		{name: "non-standard finalizer", old: endpointsForValidation(), new: endpointsForValidation(func(ep *corev1.Endpoints) { ep.Finalizers = []string{"mine"} }),
			want: []string{`metadata.finalizers[0]: Invalid value: "mine"`, `metadata.finalizers[0]: Invalid value: "mine"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidateEndpointsUpdate(tc.new, tc.old), tc.want)
		})
	}
}
