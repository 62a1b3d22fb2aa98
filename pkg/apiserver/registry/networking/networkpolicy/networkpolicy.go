// Package networkpolicy is the registry of networking.k8s.io/v1 NetworkPolicies: their
// defaults, validation, strategy, table and storage. berth stores policies for the network
// plugins that enforce them; nothing in berth reads them.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/networking.k8s.io/v1/namespaces/NS/networkpolicies.
package networkpolicy

import (
	"context"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the networkpolicies endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       networkingv1.Resource("networkpolicies"),
		Singular:       "networkpolicy",
		New:            func() runtime.Object { return &networkingv1.NetworkPolicy{} },
		NewList:        func() runtime.Object { return &networkingv1.NetworkPolicyList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"netpol"}}, nil
}

// SetDefaults fills in what upstream's v1 defaults do: a policy that names no types is an
// Ingress policy, and an Egress one too when it has egress rules; a port's protocol is TCP.
func SetDefaults(np *networkingv1.NetworkPolicy) {
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) != 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	for i := range np.Spec.Ingress {
		defaultPorts(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		defaultPorts(np.Spec.Egress[i].Ports)
	}
}

func defaultPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			tcp := corev1.ProtocolTCP
			ports[i].Protocol = &tcp
		}
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of NetworkPolicies: the generation
// counts changes of the spec.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*networkingv1.NetworkPolicy).Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	np, oldNP := obj.(*networkingv1.NetworkPolicy), old.(*networkingv1.NetworkPolicy)
	if !reflect.DeepEqual(np.Spec, oldNP.Spec) {
		np.Generation = oldNP.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateNetworkPolicy(obj.(*networkingv1.NetworkPolicy))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateNetworkPolicyUpdate(obj.(*networkingv1.NetworkPolicy), old.(*networkingv1.NetworkPolicy))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return Warnings(obj.(*networkingv1.NetworkPolicy))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return Warnings(obj.(*networkingv1.NetworkPolicy))
}

// Warnings are upstream's: ipBlock CIDRs written in ways that are ambiguous (leading zeros,
// bits past the prefix, IPv4-mapped IPv6).
func Warnings(np *networkingv1.NetworkPolicy) []string {
	var warnings []string
	ipBlock := func(b *networkingv1.IPBlock, p *field.Path) {
		if b == nil {
			return
		}
		warnings = append(warnings, validation.GetWarningsForCIDR(p.Child("cidr"), b.CIDR)...)
		for k, except := range b.Except {
			warnings = append(warnings, validation.GetWarningsForCIDR(p.Child("except").Index(k), except)...)
		}
	}
	spec := field.NewPath("spec")
	for i, rule := range np.Spec.Ingress {
		for j := range rule.From {
			ipBlock(rule.From[j].IPBlock, spec.Child("ingress").Index(i).Child("from").Index(j).Child("ipBlock"))
		}
	}
	for i, rule := range np.Spec.Egress {
		for j := range rule.To {
			ipBlock(rule.To[j].IPBlock, spec.Child("egress").Index(i).Child("to").Index(j).Child("ipBlock"))
		}
	}
	return warnings
}

// Fields are the fields NetworkPolicies can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*networkingv1.NetworkPolicy).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get networkpolicies`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*networkingv1.NetworkPolicy] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
		table.AgeColumn(),
	}, func(np *networkingv1.NetworkPolicy, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), table.Age(np, now)}}
	})
}
