// Package ingressclass is the registry of networking.k8s.io/v1 IngressClasses: their
// defaults, validation, strategy, table and storage. An IngressClass names the controller
// that implements the Ingresses of that class, and optionally its parameters.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/networking.k8s.io/v1/ingressclasses.
package ingressclass

import (
	"context"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the ingressclasses endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       networkingv1.Resource("ingressclasses"),
		Singular:       "ingressclass",
		New:            func() runtime.Object { return &networkingv1.IngressClass{} },
		NewList:        func() runtime.Object { return &networkingv1.IngressClassList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

// SetDefaults: parameters without a scope are cluster-scoped, as upstream's v1 defaults.
func SetDefaults(ic *networkingv1.IngressClass) {
	if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
		p.Scope = ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of IngressClasses: the generation
// counts changes of the spec.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*networkingv1.IngressClass).Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ic, oldIC := obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass)
	if !equality.Semantic.DeepEqual(ic.Spec, oldIC.Spec) {
		ic.Generation = oldIC.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateIngressClass(obj.(*networkingv1.IngressClass))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateIngressClassUpdate(obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass))
}

// Fields are the fields IngressClasses can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*networkingv1.IngressClass).ObjectMeta, false)
}

// IsDefault reports whether the class is marked as the default for Ingresses that name none.
func IsDefault(ic *networkingv1.IngressClass) bool {
	return ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
}

// NewTableConvertor returns the columns of `kubectl get ingressclasses`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*networkingv1.IngressClass] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
		{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
		table.AgeColumn(),
	}, func(ic *networkingv1.IngressClass, now time.Time) metav1.TableRow {
		name := ic.Name
		if IsDefault(ic) {
			name += " (default)"
		}
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return metav1.TableRow{Cells: []any{name, ic.Spec.Controller, params, table.Age(ic, now)}}
	})
}
