package endpoints

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/endpoints/deprecation"
	"k8s.io/apiserver/pkg/registry/rest"
)

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	if !Strategy.NamespaceScoped() {
		t.Error("Endpoints are namespaced")
	}
	if !Strategy.AllowCreateOnUpdate(ctx) {
		t.Error("AllowCreateOnUpdate: a PUT may create Endpoints, as upstream")
	}
	if !Strategy.AllowUnconditionalUpdate(ctx) {
		t.Error("AllowUnconditionalUpdate: updates without a resourceVersion are allowed")
	}
}

// Upstream's strategy leaves Endpoints as written: repacking subsets is the controller's
// work, and users' Endpoints are stored as they come.
func TestStrategyPrepareKeepsEverything(t *testing.T) {
	ep := endpointsForValidation(func(ep *corev1.Endpoints) {
		ep.Subsets = append(ep.Subsets, ep.Subsets[0]) // an unpacked duplicate
		ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, corev1.EndpointAddress{IP: "10.0.0.0"})
	})
	want := ep.DeepCopy()
	Strategy.PrepareForCreate(context.Background(), ep)
	if !reflect.DeepEqual(ep, want) {
		t.Errorf("PrepareForCreate changed the object: %+v", ep)
	}
	updated := ep.DeepCopy()
	updated.Subsets = updated.Subsets[:1]
	want = updated.DeepCopy()
	Strategy.PrepareForUpdate(context.Background(), updated, ep)
	if !reflect.DeepEqual(updated, want) {
		t.Errorf("PrepareForUpdate changed the object: %+v", updated)
	}
}

// The cases are upstream's (pkg/registry/core/endpoint: Test_endpointsWarning). With strict IP
// validation these addresses only get this far in subsets an update left unchanged.
func TestWarnings(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	legacy := []corev1.EndpointSubset{
		{Addresses: addrs("fd00::1234", "01.02.03.04")},
		{Addresses: addrs("::ffff:1.2.3.4")},
		{Addresses: addrs("1.2.3.4"), NotReadyAddresses: addrs("::ffff:1.2.3.4", "fd00:0::1")},
	}
	tests := []struct {
		name   string
		labels map[string]string
		in     []corev1.EndpointSubset
		want   []string
	}{
		{name: "no subsets"},
		{name: "canonical addresses", in: []corev1.EndpointSubset{{Addresses: addrs("1.2.3.4", "fd00::1234")}}},
		{name: "legacy forms", in: legacy, want: []string{
			`subsets[0].addresses[1].ip: non-standard IP address "01.02.03.04" is invalid: use "1.2.3.4"`,
			`subsets[1].addresses[0].ip: non-standard IP address "::ffff:1.2.3.4" is invalid: use "1.2.3.4"`,
			`subsets[2].notReadyAddresses[0].ip: non-standard IP address "::ffff:1.2.3.4" is invalid: use "1.2.3.4"`,
			`subsets[2].notReadyAddresses[1].ip: IPv6 address "fd00:0::1" should be in RFC 5952 canonical format ("fd00::1")`,
		}},
		{name: "the endpoints controller's are not checked", in: legacy,
			labels: map[string]string{"endpoints.kubernetes.io/managed-by": "endpoint-controller"}},
		{name: "another manager's are", in: []corev1.EndpointSubset{{Addresses: addrs("01.02.03.04")}},
			labels: map[string]string{"endpoints.kubernetes.io/managed-by": "someone-else"},
			want:   []string{`subsets[0].addresses[0].ip: non-standard IP address "01.02.03.04" is invalid: use "1.2.3.4"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Subsets: tc.in}
			if got := Strategy.WarningsOnCreate(context.Background(), ep); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("WarningsOnCreate = %q, want %q", got, tc.want)
			}
			if got := Strategy.WarningsOnUpdate(context.Background(), ep, ep); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("WarningsOnUpdate = %q, want %q", got, tc.want)
			}
		})
	}
}

// What a client sees: the generic store's checks, the strategy's, and the merge that drops
// repeated errors, run by the library functions the store itself calls.
func TestStrategyValidationAsServed(t *testing.T) {
	ctx := context.Background()
	old := endpointsForValidation()
	bad := endpointsForValidation(func(ep *corev1.Endpoints) {
		ep.Finalizers = []string{"mine"}
		ep.Labels = map[string]string{"a b": "c"}
	})
	assertErrors(t, rest.ValidateUpdate(ctx, bad, old, Strategy), []string{
		`metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters`,
		`metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`,
	})
	assertErrors(t, rest.ValidateCreate(ctx, bad, Strategy), []string{
		`metadata.labels: Invalid value: "a b"`,
		`metadata.finalizers[0]: Invalid value: "mine"`,
	})
	assertErrors(t, rest.ValidateUpdate(ctx, old.DeepCopy(), old, Strategy), nil)
}

// The deprecation warning comes from the generic installer, which asks the type; this pins
// the text kube-apiserver v1.33+ sends, for the version berth reports.
func TestDeprecationWarning(t *testing.T) {
	ep := &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"}}
	if !deprecation.IsDeprecated(ep, 1, 37) {
		t.Fatal("v1 Endpoints are not deprecated at 1.37")
	}
	const want = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
	if got := deprecation.WarningMessage(ep); got != want {
		t.Errorf("warning = %q, want %q", got, want)
	}
	list := &corev1.EndpointsList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EndpointsList"}}
	if got := deprecation.WarningMessage(list); !strings.HasPrefix(got, "v1 EndpointsList is deprecated in v1.33+") {
		t.Errorf("list warning = %q", got)
	}
}

func TestFields(t *testing.T) {
	got := Fields(endpointsForValidation())
	if want := (fields.Set{"metadata.name": "mysvc", "metadata.namespace": "namespace"}); !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %v, want %v", got, want)
	}
	if len(Fields(&corev1.Endpoints{})) != 2 {
		t.Error("a zero object must still list both metadata fields")
	}
}
