package endpointslice

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of EndpointSlices.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// AllowCreateOnUpdate: a PUT may create an EndpointSlice, as kube-apiserver allows.
func (strategy) AllowCreateOnUpdate(context.Context) bool { return true }

// PrepareForCreate starts the generation at 1 and drops deprecatedTopology, which the v1 API
// does not take.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*discoveryv1.EndpointSlice)
	s.Generation = 1
	dropTopology(s)
}

// PrepareForUpdate bumps the generation when anything but metadata (labels aside) changed:
// consumers such as the service proxy track slices by generation.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	s, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	if !apiequality.Semantic.DeepEqual(s.Endpoints, o.Endpoints) {
		dropTopology(s)
	}
	newMeta, oldMeta := s.ObjectMeta, o.ObjectMeta
	s.ObjectMeta, o.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
	changed := !apiequality.Semantic.DeepEqual(s, o) || !apiequality.Semantic.DeepEqual(newMeta.Labels, oldMeta.Labels)
	s.ObjectMeta, o.ObjectMeta = newMeta, oldMeta
	if changed {
		s.Generation = o.Generation + 1
	} else {
		s.Generation = o.Generation
	}
}

func dropTopology(s *discoveryv1.EndpointSlice) {
	for i := range s.Endpoints {
		s.Endpoints[i].DeprecatedTopology = nil
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateEndpointSlice(obj.(*discoveryv1.EndpointSlice), nil)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateEndpointSliceUpdate(obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	s := obj.(*discoveryv1.EndpointSlice)
	var out []string
	if s.AddressType == discoveryv1.AddressTypeFQDN {
		out = append(out, "FQDN endpoints are deprecated")
	}
	return append(out, badIPWarnings(s)...)
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return badIPWarnings(obj.(*discoveryv1.EndpointSlice))
}

// badIPWarnings are those of addresses in non-canonical forms.
func badIPWarnings(s *discoveryv1.EndpointSlice) []string {
	if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
		return nil
	}
	var out []string
	for i, ep := range s.Endpoints {
		for j, addr := range ep.Addresses {
			out = append(out, validation.GetWarningsForIP(field.NewPath("endpoints").Index(i).Child("addresses").Index(j), addr)...)
		}
	}
	return out
}

// Fields are the fields EndpointSlices can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*discoveryv1.EndpointSlice).ObjectMeta, true)
}
