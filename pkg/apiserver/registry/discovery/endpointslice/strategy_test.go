package endpointslice

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"
)

// apiRequest is the context of a request through the API, which the strategy's topology
// rule looks for.
func apiRequest() context.Context {
	return genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{
		IsResourceRequest: true, APIGroup: discoveryv1.GroupName, APIVersion: "v1", Resource: "endpointslices",
	})
}

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	if !Strategy.NamespaceScoped() {
		t.Error("slices are namespaced")
	}
	if Strategy.AllowCreateOnUpdate(ctx) {
		t.Error("AllowCreateOnUpdate: a slice is created by POST only, as upstream")
	}
	if !Strategy.AllowUnconditionalUpdate(ctx) {
		t.Error("AllowUnconditionalUpdate: updates without a resourceVersion are allowed")
	}
}

func TestPrepareForCreate(t *testing.T) {
	s := sliceForValidation(func(s *discoveryv1.EndpointSlice) {
		s.Generation = 7
		s.Endpoints[0].DeprecatedTopology = map[string]string{corev1.LabelHostname: "node-1", "key": "value"}
	})
	Strategy.PrepareForCreate(apiRequest(), s)
	if s.Generation != 1 {
		t.Errorf("generation %d after create, want 1", s.Generation)
	}
	if s.Endpoints[0].DeprecatedTopology != nil {
		t.Errorf("deprecatedTopology kept: %v", s.Endpoints[0].DeprecatedTopology)
	}
	if *s.Endpoints[0].NodeName != "node-1" {
		t.Errorf("nodeName changed to %q", *s.Endpoints[0].NodeName)
	}
	// Upstream drops the topology of requests through the API only.
	inProcess := sliceForValidation(func(s *discoveryv1.EndpointSlice) {
		s.Endpoints[0].DeprecatedTopology = map[string]string{"key": "value"}
	})
	Strategy.PrepareForCreate(context.Background(), inProcess)
	if inProcess.Endpoints[0].DeprecatedTopology == nil {
		t.Error("in-process create: deprecatedTopology dropped")
	}
}

// The first cases are upstream's (pkg/registry/discovery/endpointslice: TestPrepareForUpdate).
func TestPrepareForUpdateGeneration(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   int64
	}{
		{name: "unchanged", mutate: func(*discoveryv1.EndpointSlice) {}, want: 1},
		{name: "endpoints changed", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "1.2.3.5" }, want: 2},
		{name: "labels changed", mutate: func(s *discoveryv1.EndpointSlice) { s.Labels["example"] = "two" }, want: 2},
		{name: "ports changed", mutate: func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr.To[int32](8080) }, want: 2},
		{name: "a condition changed", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Ready = ptr.To(false) }, want: 2},
		{name: "annotations changed", mutate: func(s *discoveryv1.EndpointSlice) { s.Annotations = map[string]string{"a": "b"} }, want: 1},
		{name: "owner references changed", mutate: func(s *discoveryv1.EndpointSlice) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "u"}}
		}, want: 1},
		// A decoded request may carry its kind where the stored object does not.
		{name: "type meta differs", mutate: func(s *discoveryv1.EndpointSlice) {
			s.TypeMeta = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
		}, want: 1},
		// nil and empty say the same.
		{name: "empty for nil", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hints = nil; s.Ports = []discoveryv1.EndpointPort{} }, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Generation = 1; s.Labels["example"] = "one" })
			s := old.DeepCopy()
			tc.mutate(s)
			oldCopy := old.DeepCopy()
			Strategy.PrepareForUpdate(apiRequest(), s, old)
			if s.Generation != tc.want {
				t.Errorf("generation %d, want %d", s.Generation, tc.want)
			}
			if !reflect.DeepEqual(old, oldCopy) {
				t.Errorf("the old object changed")
			}
		})
	}
}

// Upstream drops the topology of requests through the API only, on update as on create.
func TestPrepareForUpdateInProcessKeepsTopology(t *testing.T) {
	old := sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Generation = 1 })
	s := sliceForValidation(func(s *discoveryv1.EndpointSlice) {
		s.Generation = 1
		s.Endpoints[0].NodeName = nil
		s.Endpoints[0].DeprecatedTopology = map[string]string{corev1.LabelHostname: "node-1"}
	})
	Strategy.PrepareForUpdate(context.Background(), s, old)
	if s.Endpoints[0].DeprecatedTopology == nil || s.Endpoints[0].NodeName != nil {
		t.Errorf("in-process update: endpoint changed to %+v", s.Endpoints[0])
	}
	if s.Generation != 2 {
		t.Errorf("generation %d, want 2", s.Generation)
	}
}

// The cases are upstream's (Test_dropTopologyOnV1), on v1 requests: berth serves no v1beta1.
func TestPrepareForUpdateTopology(t *testing.T) {
	topo := func(hostname string, extra ...string) map[string]string {
		m := map[string]string{corev1.LabelHostname: hostname}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	ep := func(hostname string, nodeName *string, topology map[string]string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Hostname: ptr.To(hostname), NodeName: nodeName, DeprecatedTopology: topology}
	}
	tests := []struct {
		name          string
		old, new, out []discoveryv1.Endpoint
	}{
		{name: "endpoints unchanged: kept whole",
			old: []discoveryv1.Endpoint{ep("h", ptr.To("node-1"), map[string]string{"key": "value"})},
			new: []discoveryv1.Endpoint{ep("h", ptr.To("node-1"), map[string]string{"key": "value"})},
			out: []discoveryv1.Endpoint{ep("h", ptr.To("node-1"), map[string]string{"key": "value"})}},
		{name: "no old topology: dropped, nodeName not taken from it",
			old: []discoveryv1.Endpoint{ep("h", nil, map[string]string{"key": "value"})},
			new: []discoveryv1.Endpoint{ep("h1", nil, topo("node-1"))},
			out: []discoveryv1.Endpoint{ep("h1", nil, nil)}},
		{name: "node names the old topology held move to nodeName",
			old: []discoveryv1.Endpoint{ep("h", nil, topo("node-1", "other", "value")), ep("h", nil, topo("node-1", "foo", "bar"))},
			new: []discoveryv1.Endpoint{ep("h1a", nil, topo("node-1", "other", "value")), ep("h1b", nil, topo("node-1", "foo", "bar"))},
			out: []discoveryv1.Endpoint{ep("h1a", ptr.To("node-1"), nil), ep("h1b", ptr.To("node-1"), nil)}},
		{name: "swapped",
			old: []discoveryv1.Endpoint{ep("h", nil, topo("node-1")), ep("h", nil, topo("node-2"))},
			new: []discoveryv1.Endpoint{ep("h1a", nil, topo("node-2")), ep("h1b", nil, topo("node-1"))},
			out: []discoveryv1.Endpoint{ep("h1a", ptr.To("node-2"), nil), ep("h1b", ptr.To("node-1"), nil)}},
		{name: "a new node name does not",
			old: []discoveryv1.Endpoint{ep("h", nil, topo("node-1")), ep("h", nil, topo("node-2"))},
			new: []discoveryv1.Endpoint{ep("h1a", nil, topo("node-3")), ep("h1b", nil, topo("node-1"))},
			out: []discoveryv1.Endpoint{ep("h1a", nil, nil), ep("h1b", ptr.To("node-1"), nil)}},
		{name: "a set nodeName wins",
			old: []discoveryv1.Endpoint{ep("h", nil, topo("node-1")), ep("h", nil, topo("node-1"))},
			new: []discoveryv1.Endpoint{ep("h1a", nil, topo("node-1")), ep("h1b", ptr.To("node-2"), topo("node-1"))},
			out: []discoveryv1.Endpoint{ep("h1a", ptr.To("node-1"), nil), ep("h1b", ptr.To("node-2"), nil)}},
		{name: "an invalid node name does not move",
			old: []discoveryv1.Endpoint{ep("h", nil, topo("Node_1"))},
			new: []discoveryv1.Endpoint{ep("h1", nil, topo("Node_1"))},
			out: []discoveryv1.Endpoint{ep("h1", nil, nil)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Endpoints = tc.old })
			s := sliceForValidation(func(s *discoveryv1.EndpointSlice) { s.Endpoints = tc.new })
			Strategy.PrepareForUpdate(apiRequest(), s, old)
			if !apiequality.Semantic.DeepEqual(s.Endpoints, tc.out) {
				t.Errorf("endpoints = %+v, want %+v", s.Endpoints, tc.out)
			}
		})
	}
}

// The cases are upstream's (TestWarningsOnEndpointSliceAddressType, Test_warnOnBadIPs). With
// strict validation, legacy addresses get this far only in endpoints an update left
// unchanged.
func TestWarnings(t *testing.T) {
	legacy := []discoveryv1.Endpoint{
		{Addresses: []string{"1.2.3.4", "01.02.03.04"}},
		{Addresses: []string{"::ffff:1.2.3.4"}},
	}
	legacyWarnings := []string{
		`endpoints[0].addresses[1]: non-standard IP address "01.02.03.04" is invalid: use "1.2.3.4"`,
		`endpoints[1].addresses[0]: non-standard IP address "::ffff:1.2.3.4" is invalid: use "1.2.3.4"`,
	}
	tests := []struct {
		name               string
		addressType        discoveryv1.AddressType
		managedBy          string
		endpoints          []discoveryv1.Endpoint
		onCreate, onUpdate []string
	}{
		{name: "IPv4, canonical", addressType: discoveryv1.AddressTypeIPv4, endpoints: []discoveryv1.Endpoint{{Addresses: []string{"1.2.3.4"}}}},
		{name: "IPv6, not canonical", addressType: discoveryv1.AddressTypeIPv6, endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00:0::1"}}},
			onCreate: []string{`endpoints[0].addresses[0]: IPv6 address "fd00:0::1" should be in RFC 5952 canonical format ("fd00::1")`},
			onUpdate: []string{`endpoints[0].addresses[0]: IPv6 address "fd00:0::1" should be in RFC 5952 canonical format ("fd00::1")`}},
		{name: "legacy forms", addressType: discoveryv1.AddressTypeIPv4, endpoints: legacy, onCreate: legacyWarnings, onUpdate: legacyWarnings},
		{name: "the EndpointSlice controller's are not checked", addressType: discoveryv1.AddressTypeIPv4, endpoints: legacy,
			managedBy: "endpointslice-controller.k8s.io"},
		{name: "nor the mirroring controller's", addressType: discoveryv1.AddressTypeIPv4, endpoints: legacy,
			managedBy: "endpointslicemirroring-controller.k8s.io"},
		{name: "another manager's are", addressType: discoveryv1.AddressTypeIPv4, endpoints: legacy, managedBy: "someone-else",
			onCreate: legacyWarnings, onUpdate: legacyWarnings},
		{name: "FQDN: deprecated, on create only", addressType: discoveryv1.AddressTypeFQDN,
			endpoints: []discoveryv1.Endpoint{{Addresses: []string{"example.com"}}},
			onCreate:  []string{"spec.addressType: FQDN endpoints are deprecated"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &discoveryv1.EndpointSlice{AddressType: tc.addressType, Endpoints: tc.endpoints}
			if tc.managedBy != "" {
				s.Labels = map[string]string{discoveryv1.LabelManagedBy: tc.managedBy}
			}
			if got := Strategy.WarningsOnCreate(context.Background(), s); !reflect.DeepEqual(got, tc.onCreate) {
				t.Errorf("WarningsOnCreate = %q, want %q", got, tc.onCreate)
			}
			if got := Strategy.WarningsOnUpdate(context.Background(), s, s); !reflect.DeepEqual(got, tc.onUpdate) {
				t.Errorf("WarningsOnUpdate = %q, want %q", got, tc.onUpdate)
			}
		})
	}
}

func TestFields(t *testing.T) {
	got := Fields(sliceForValidation())
	if want := (fields.Set{"metadata.name": "hello", "metadata.namespace": "world"}); !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %v, want %v", got, want)
	}
	if len(Fields(&discoveryv1.EndpointSlice{})) != 2 {
		t.Error("a zero slice must still list both metadata fields")
	}
}
