package networkpolicy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
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

func policy(mutate ...func(*networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "np", Namespace: "default", ResourceVersion: "1"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	for _, m := range mutate {
		m(np)
	}
	return np
}

func from(peers ...networkingv1.NetworkPolicyPeer) func(*networkingv1.NetworkPolicy) {
	return func(np *networkingv1.NetworkPolicy) {
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers})
	}
}

func ports(ps ...networkingv1.NetworkPolicyPort) func(*networkingv1.NetworkPolicy) {
	return func(np *networkingv1.NetworkPolicy) {
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{Ports: ps})
	}
}

func intPort(p int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(p)) }

func TestSetDefaults(t *testing.T) {
	np := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: intPort(80)}}}},
		Egress:  []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP)}}}},
	}}
	SetDefaults(np)
	if got := fmt.Sprint(np.Spec.PolicyTypes); got != "[Ingress Egress]" {
		t.Errorf("policyTypes %s, want [Ingress Egress]", got)
	}
	if p := np.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("ingress port protocol %v, want TCP", p)
	}
	if p := np.Spec.Egress[0].Ports[0].Protocol; *p != corev1.ProtocolUDP {
		t.Errorf("egress port protocol %v, want UDP kept", *p)
	}

	ingressOnly := &networkingv1.NetworkPolicy{}
	SetDefaults(ingressOnly)
	if got := fmt.Sprint(ingressOnly.Spec.PolicyTypes); got != "[Ingress]" {
		t.Errorf("policyTypes %s, want [Ingress]", got)
	}
	egressOnly := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
	}}
	SetDefaults(egressOnly)
	if got := fmt.Sprint(egressOnly.Spec.PolicyTypes); got != "[Egress]" {
		t.Errorf("policyTypes %s, want [Egress] kept", got)
	}
}

func TestValidateNetworkPolicy(t *testing.T) {
	const portRange = "must be between 1 and 65535, inclusive"
	tests := []struct {
		name string
		np   *networkingv1.NetworkPolicy
		want []string
	}{
		{name: "valid", np: policy(
			from(networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}},
				networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}, PodSelector: &metav1.LabelSelector{}},
				networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.0/16", Except: []string{"192.168.3.0/24"}}}),
			ports(networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolSCTP), Port: intPort(80), EndPort: ptr.To[int32](90)},
				networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromString("http"))}))},
		{name: "no name", np: policy(func(np *networkingv1.NetworkPolicy) { np.Name = "" }),
			want: []string{"FieldValueRequired metadata.name: name or generateName is required"}},
		{name: "bad pod selector", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.PodSelector.MatchLabels = map[string]string{"app": "bad value"}
		}), want: []string{`FieldValueInvalid spec.podSelector.matchLabels: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{name: "bad protocol", np: policy(ports(networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.Protocol("ICMP"))})),
			want: []string{`FieldValueNotSupported spec.ingress[0].ports[0].protocol: supported values: "TCP", "UDP", "SCTP"`}},
		{name: "port out of range", np: policy(ports(networkingv1.NetworkPolicyPort{Port: intPort(0)})),
			want: []string{"FieldValueInvalid spec.ingress[0].ports[0].port: " + portRange}},
		{name: "end port below port", np: policy(ports(networkingv1.NetworkPolicyPort{Port: intPort(100), EndPort: ptr.To[int32](90)})),
			want: []string{"FieldValueInvalid spec.ingress[0].ports[0].endPort: must be greater than or equal to `port`"}},
		{name: "end port with named port", np: policy(ports(networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromString("http")), EndPort: ptr.To[int32](90)})),
			want: []string{"FieldValueInvalid spec.ingress[0].ports[0].endPort: may not be specified when `port` is non-numeric"}},
		{name: "end port without port", np: policy(ports(networkingv1.NetworkPolicyPort{EndPort: ptr.To[int32](90)})),
			want: []string{"FieldValueInvalid spec.ingress[0].ports[0].endPort: may not be specified when `port` is not specified"}},
		{name: "empty peer", np: policy(from(networkingv1.NetworkPolicyPeer{})),
			want: []string{"FieldValueRequired spec.ingress[0].from[0]: must specify a peer"}},
		{name: "ipBlock and selector", np: policy(from(networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}, IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}})),
			want: []string{"FieldValueForbidden spec.ingress[0].from[0]: may not specify both ipBlock and another peer"}},
		{name: "ipBlock without CIDR", np: policy(from(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{}})),
			want: []string{"FieldValueRequired spec.ingress[0].from[0].ipBlock.cidr: "}},
		{name: "ipBlock bad CIDR", np: policy(from(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.1"}})),
			want: []string{"FieldValueInvalid spec.ingress[0].from[0].ipBlock.cidr: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"}},
		{name: "except outside", np: policy(from(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.0/24", Except: []string{"192.168.0.0/16"}}})),
			want: []string{"FieldValueInvalid spec.ingress[0].from[0].ipBlock.except[0]: must be a strict subset of `cidr`"}},
		{name: "egress peer", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{}}}}
		}), want: []string{"FieldValueRequired spec.egress[0].to[0]: must specify a peer"}},
		{name: "unknown policy type", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{"Both"}
		}), want: []string{`FieldValueNotSupported spec.policyTypes[0]: supported values: "Ingress", "Egress"`}},
		{name: "three policy types", np: policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}
		}), want: []string{"FieldValueInvalid spec.policyTypes: may not specify more than two policyTypes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateNetworkPolicy(tt.np), tt.want)
		})
	}
}

func TestValidateNetworkPolicyUpdate(t *testing.T) {
	// A CIDR stored before strict parsing stays acceptable; a new one does not.
	old := policy(from(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "010.0.0.0/8"}}))
	assertFieldErrors(t, ValidateNetworkPolicyUpdate(old.DeepCopy(), old), nil)
	changed := policy(from(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "011.0.0.0/8"}}))
	assertFieldErrors(t, ValidateNetworkPolicyUpdate(changed, old),
		[]string{"FieldValueInvalid spec.ingress[0].from[0].ipBlock.cidr: must not have leading 0s in IP or prefix length"})
	assertFieldErrors(t, Strategy.Validate(context.Background(), changed),
		[]string{"FieldValueInvalid spec.ingress[0].from[0].ipBlock.cidr: must not have leading 0s in IP or prefix length"})
}

func TestStrategyGeneration(t *testing.T) {
	np := policy()
	Strategy.PrepareForCreate(context.Background(), np)
	if np.Generation != 1 {
		t.Fatalf("generation %d on create, want 1", np.Generation)
	}
	same := np.DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	Strategy.PrepareForUpdate(context.Background(), same, np)
	if same.Generation != 1 {
		t.Errorf("generation %d after a metadata change, want 1", same.Generation)
	}
	changed := np.DeepCopy()
	changed.Spec.PolicyTypes = append(changed.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	Strategy.PrepareForUpdate(context.Background(), changed, np)
	if changed.Generation != 2 {
		t.Errorf("generation %d after a spec change, want 2", changed.Generation)
	}
}

func TestWarnings(t *testing.T) {
	np := policy(from(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.1/8"}}))
	got := Strategy.WarningsOnCreate(context.Background(), np)
	if len(got) != 1 || !slices.ContainsFunc(got, func(w string) bool { return len(w) > 0 && w[:40] == "spec.ingress[0].from[0].ipBlock.cidr: CI" }) {
		t.Errorf("warnings %q, want one on spec.ingress[0].from[0].ipBlock.cidr", got)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	np := policy()
	np.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Minute))
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), &networkingv1.NetworkPolicyList{Items: []networkingv1.NetworkPolicy{*np}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got := fmt.Sprint(cols, tbl.Rows[0].Cells); got != "[Name Pod-Selector Age] [np app=web 5m]" {
		t.Errorf("table %s", got)
	}
}
