package servicecidr

import (
	"fmt"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errorSummary is each error as "Type path: detail", sorted.
func errorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s: %s", string(e.Type), e.Field, e.Detail))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := errorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func cidrForValidation(cidrs []string, mutate ...func(*networkingv1.ServiceCIDR)) *networkingv1.ServiceCIDR {
	sc := &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultName, ResourceVersion: "1"},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: cidrs},
	}
	for _, m := range mutate {
		m(sc)
	}
	return sc
}

func cidrs(c ...string) []string { return c }

const (
	notCIDRMsg   = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
	oneEachMsg   = "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"
	immutableMsg = "field is immutable"
)

func TestValidateServiceCIDR(t *testing.T) {
	tests := []struct {
		name string
		sc   *networkingv1.ServiceCIDR
		want []string
	}{
		{name: "IPv4", sc: cidrForValidation(cidrs("10.96.0.0/12"))},
		{name: "IPv6", sc: cidrForValidation(cidrs("fd00:10:96::/112"))},
		{name: "dual-stack", sc: cidrForValidation(cidrs("10.96.0.0/12", "fd00:10:96::/112"))},
		{name: "dual-stack, IPv6 first", sc: cidrForValidation(cidrs("fd00:10:96::/112", "10.96.0.0/12"))},
		{name: "single address", sc: cidrForValidation(cidrs("10.0.0.1/32"))},
		{name: "protected", sc: cidrForValidation(cidrs("10.96.0.0/12"), func(sc *networkingv1.ServiceCIDR) { sc.Finalizers = []string{ProtectionFinalizer} })},
		{name: "no CIDRs", sc: cidrForValidation(nil),
			want: []string{"FieldValueRequired spec.cidrs: at least one CIDR required"}},
		{name: "three CIDRs", sc: cidrForValidation(cidrs("10.0.0.0/24", "fd00::/64", "10.1.0.0/24")),
			want: []string{"FieldValueInvalid spec.cidrs: may only hold up to 2 values"}},
		{name: "not a CIDR", sc: cidrForValidation(cidrs("bad cidr")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + notCIDRMsg}},
		{name: "an address", sc: cidrForValidation(cidrs("10.0.0.1")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + notCIDRMsg}},
		{name: "bits past the prefix", sc: cidrForValidation(cidrs("10.96.0.1/12")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: must not have bits set beyond the prefix length"}},
		{name: "IPv6 not canonical", sc: cidrForValidation(cidrs("10.96.0.0/12", "fd00:0:0::/64")),
			want: []string{`FieldValueInvalid spec.cidrs[1]: must be in canonical form ("fd00::/64")`}},
		{name: "leading zeros", sc: cidrForValidation(cidrs("010.96.0.0/12")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: must not have leading 0s in IP or prefix length"}},
		{name: "IPv4-mapped IPv6", sc: cidrForValidation(cidrs("::ffff:10.0.0.0/120")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: must not have an IPv4-mapped IPv6 address"}},
		{name: "two IPv4", sc: cidrForValidation(cidrs("10.0.0.0/24", "10.1.0.0/24")),
			want: []string{"FieldValueInvalid spec.cidrs: " + oneEachMsg}},
		{name: "two IPv6", sc: cidrForValidation(cidrs("fd00:1::/64", "fd00:2::/64")),
			want: []string{"FieldValueInvalid spec.cidrs: " + oneEachMsg}},
		{name: "two unparsable are not one family", sc: cidrForValidation(cidrs("a", "b")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + notCIDRMsg, "FieldValueInvalid spec.cidrs[1]: " + notCIDRMsg}},
		{name: "bad name", sc: cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Name = "Kubernetes" }),
			want: []string{"FieldValueInvalid metadata.name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, " +
				"'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
				`'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{name: "namespaced", sc: cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Namespace = "default" }),
			want: []string{"FieldValueForbidden metadata.namespace: not allowed on this type"}},
		{name: "finalizer without a domain", sc: cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Finalizers = []string{"mine"} }),
			want: []string{"FieldValueInvalid metadata.finalizers[0]: name is neither a standard finalizer name nor is it fully qualified"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateServiceCIDR(tc.sc), tc.want)
		})
	}
}

func TestValidateServiceCIDRUpdate(t *testing.T) {
	v4 := cidrForValidation(cidrs("192.168.0.0/24"))
	v6 := cidrForValidation(cidrs("fd00:1234::/64"))
	dual := cidrForValidation(cidrs("192.168.0.0/24", "fd00:1234::/64"))
	tests := []struct {
		name     string
		old, new *networkingv1.ServiceCIDR
		want     []string
	}{
		{name: "no change, dual-stack", old: dual, new: dual.DeepCopy()},
		{name: "no change, IPv4", old: v4, new: v4.DeepCopy()},
		{name: "labels", old: v4, new: cidrForValidation(cidrs("192.168.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Labels = map[string]string{"a": "b"} })},
		{name: "IPv4 becomes dual-stack", old: v4, new: cidrForValidation(cidrs("192.168.0.0/24", "fd00:1234::/64"))},
		{name: "IPv6 becomes dual-stack", old: v6, new: cidrForValidation(cidrs("fd00:1234::/64", "192.168.0.0/24"))},
		{name: "change both of dual-stack", old: dual, new: cidrForValidation(cidrs("10.0.0.0/16", "fd00:abcd::/64")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + immutableMsg, "FieldValueInvalid spec.cidrs[1]: " + immutableMsg}},
		{name: "change the only one", old: v4, new: cidrForValidation(cidrs("10.0.0.0/16")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + immutableMsg}},
		{name: "unchanged invalid CIDR is not checked again", old: cidrForValidation(cidrs("bad")), new: cidrForValidation(cidrs("bad"))},
		{name: "change to an invalid CIDR reports only immutability", old: v4, new: cidrForValidation(cidrs("bad cidr")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + immutableMsg}},
		{name: "dual-stack with the first changed", old: v4, new: cidrForValidation(cidrs("10.0.0.0/16", "fd00:1234::/64")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + immutableMsg}},
		{name: "IPv6 dual-stack with the first changed", old: v6, new: cidrForValidation(cidrs("fd00:abcd::/64", "192.168.0.0/24")),
			want: []string{"FieldValueInvalid spec.cidrs[0]: " + immutableMsg}},
		{name: "added CIDR of the same family", old: v4, new: cidrForValidation(cidrs("192.168.0.0/24", "10.0.0.0/16")),
			want: []string{"FieldValueInvalid spec.cidrs: " + oneEachMsg}},
		{name: "added CIDR is invalid", old: v4, new: cidrForValidation(cidrs("192.168.0.0/24", "fd00:1234::1/64")),
			want: []string{"FieldValueInvalid spec.cidrs[1]: must not have bits set beyond the prefix length"}},
		{name: "dual-stack to single", old: dual, new: cidrForValidation(cidrs("192.168.0.0/24")),
			want: []string{"FieldValueInvalid spec.cidrs: " + immutableMsg}},
		{name: "emptied", old: v4, new: cidrForValidation(nil),
			want: []string{"FieldValueInvalid spec.cidrs: " + immutableMsg}},
		{name: "dual-stack gains a third", old: dual, new: cidrForValidation(cidrs("192.168.0.0/24", "fd00:1234::/64", "10.0.0.0/16")),
			want: []string{"FieldValueInvalid spec.cidrs: " + immutableMsg}},
		{name: "rename", old: v4, new: cidrForValidation(cidrs("192.168.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Name = "other" }),
			want: []string{"FieldValueInvalid metadata.name: " + immutableMsg}},
		{name: "no resourceVersion", old: v4, new: cidrForValidation(cidrs("192.168.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.ResourceVersion = "" }),
			want: []string{"FieldValueInvalid metadata.resourceVersion: must be specified for an update"}},
		{name: "finalizer without a domain", old: v4, new: cidrForValidation(cidrs("192.168.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Finalizers = []string{"mine"} }),
			want: []string{"FieldValueInvalid metadata.finalizers[0]: name is neither a standard finalizer name nor is it fully qualified"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateServiceCIDRUpdate(tc.new, tc.old), tc.want)
		})
	}
}

func TestValidateServiceCIDRStatusUpdate(t *testing.T) {
	old := cidrForValidation(cidrs("10.0.0.0/24"))
	withStatus := func(sc *networkingv1.ServiceCIDR) {
		sc.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	}
	tests := []struct {
		name string
		new  *networkingv1.ServiceCIDR
		want []string
	}{
		{name: "conditions", new: cidrForValidation(cidrs("10.0.0.0/24"), withStatus)},
		{name: "conditions are not checked", new: cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) {
			sc.Status.Conditions = []metav1.Condition{{Type: "bad type", Status: "bad status"}}
		})},
		{name: "spec is not checked", new: cidrForValidation(cidrs("bad"), withStatus)},
		{name: "no resourceVersion", new: cidrForValidation(cidrs("10.0.0.0/24"), withStatus, func(sc *networkingv1.ServiceCIDR) { sc.ResourceVersion = "" }),
			want: []string{"FieldValueInvalid metadata.resourceVersion: must be specified for an update"}},
		{name: "rename", new: cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Name = "other" }),
			want: []string{"FieldValueInvalid metadata.name: " + immutableMsg}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateServiceCIDRStatusUpdate(tc.new, old), tc.want)
		})
	}
}
