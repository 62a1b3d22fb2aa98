// Package ingress is the registry of networking.k8s.io/v1 Ingresses: their validation,
// strategy, table and storage, and the status subresource. berth stores Ingresses for the
// ingress controllers that implement them; nothing in berth reads them.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/networking.k8s.io/v1/namespaces/NS/ingresses and
// ingresses/status. Ingresses have no v1 defaults: a path's pathType is required.
package ingress

import (
	"context"
	"fmt"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// ClassAnnotation is the annotation that named an Ingress's class before
// spec.ingressClassName; upstream still honours and checks it.
const ClassAnnotation = "kubernetes.io/ingress.class"

// Storage holds the endpoints of Ingresses.
type Storage struct {
	Ingress *registry.Resource
	Status  *registry.SubresourceREST
}

// NewStorage returns the ingresses and ingresses/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       networkingv1.Resource("ingresses"),
		Singular:       "ingress",
		New:            func() runtime.Object { return &networkingv1.Ingress{} },
		NewList:        func() runtime.Object { return &networkingv1.IngressList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		Ingress: &registry.Resource{Store: store, Short: []string{"ing"}},
		Status:  registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of Ingresses. The main resource never
// writes status (the ingress controller does, through ingresses/status); the generation
// counts changes of the spec.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ing := obj.(*networkingv1.Ingress)
	ing.Status = networkingv1.IngressStatus{}
	ing.Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ing, oldIng := obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress)
	ing.Status = oldIng.Status
	if !equality.Semantic.DeepEqual(ing.Spec, oldIng.Spec) {
		ing.Generation = oldIng.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateIngressCreate(obj.(*networkingv1.Ingress))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateIngressUpdate(obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress))
}

// WarningsOnCreate: the class annotation is deprecated in favour of spec.ingressClassName.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	ing := obj.(*networkingv1.Ingress)
	if _, ok := ing.Annotations[ClassAnnotation]; ok && ing.Spec.IngressClassName == nil {
		return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", ClassAnnotation)}
	}
	return nil
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(networkingv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of ingresses/status: only status changes. As
// upstream's, it leaves metadata to the writer.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*networkingv1.Ingress).Spec = old.(*networkingv1.Ingress).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateIngressStatusUpdate(obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress))
}

// WarningsOnUpdate: load-balancer IPs written in ambiguous forms.
func (statusStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	var warnings []string
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, lb := range obj.(*networkingv1.Ingress).Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			warnings = append(warnings, validation.GetWarningsForIP(p.Index(i), lb.IP)...)
		}
	}
	return warnings
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(networkingv1.SchemeGroupVersion, "spec")
}

// Fields are the fields Ingresses can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*networkingv1.Ingress).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get ingresses`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*networkingv1.Ingress] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
		{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
		{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
		{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
		table.AgeColumn(),
	}, func(ing *networkingv1.Ingress, now time.Time) metav1.TableRow {
		class := "<none>"
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
		ports := "80"
		if len(ing.Spec.TLS) != 0 {
			ports = "80, 443"
		}
		return metav1.TableRow{Cells: []any{ing.Name, class, hosts(ing.Spec.Rules), addresses(ing.Status.LoadBalancer), ports, table.Age(ing, now)}}
	})
}

// hosts lists the first three hosts the rules name, "*" when they name none, and how many
// rules follow the third.
func hosts(rules []networkingv1.IngressRule) string {
	const shown = 3
	var list []string
	more := false
	for _, r := range rules {
		more = more || len(list) == shown
		if !more && r.Host != "" {
			list = append(list, r.Host)
		}
	}
	if len(list) == 0 {
		return "*"
	}
	s := strings.Join(list, ",")
	if more {
		s += fmt.Sprintf(" + %d more...", len(rules)-shown)
	}
	return s
}

// addresses are the load balancer's distinct IPs or hostnames, sorted. Server-side tables
// are wide, as upstream's, so the column is not clipped.
func addresses(s networkingv1.IngressLoadBalancerStatus) string {
	set := sets.New[string]()
	for _, lb := range s.Ingress {
		if lb.IP != "" {
			set.Insert(lb.IP)
		} else if lb.Hostname != "" {
			set.Insert(lb.Hostname)
		}
	}
	return strings.Join(sets.List(set), ",")
}
