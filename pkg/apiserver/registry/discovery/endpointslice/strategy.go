package endpointslice

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of EndpointSlices.
var Strategy = strategy{registry.Base}

var _ rest.DeclarativeValidationStrategy = Strategy

func (strategy) NamespaceScoped() bool { return true }

// AllowCreateOnUpdate is false: a slice is created by POST only, as upstream (unlike
// Endpoints).
func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// PrepareForCreate starts the generation at 1 and drops deprecatedTopology.
func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	s := obj.(*discoveryv1.EndpointSlice)
	s.Generation = 1
	dropTopology(ctx, s, nil)
}

// PrepareForUpdate bumps the generation when anything but metadata changed, or the labels
// did (they say which Service the slice serves): consumers such as the service proxy track
// slices by generation. The store has already reset the generation to the stored one.
func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	s, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	if !sameButMetadata(s, o) || !apiequality.Semantic.DeepEqual(s.Labels, o.Labels) {
		s.Generation = o.Generation + 1
	}
	dropTopology(ctx, s, o)
}

// sameButMetadata compares everything but type and object metadata, so that a field added to
// the type counts without a change here.
func sameButMetadata(a, b *discoveryv1.EndpointSlice) bool {
	x, y := *a, *b
	x.TypeMeta, y.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	x.ObjectMeta, y.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
	return apiequality.Semantic.DeepEqual(&x, &y)
}

// dropTopology empties the endpoints' deprecatedTopology, which the v1 API documents as
// ignored on write, on requests through the API (upstream leaves in-process writes alone).
// An update that leaves the endpoints as they were keeps them whole. A node name that an
// old topology held (written through v1beta1, which berth does not serve) moves to nodeName
// when that is unset, so that such an update does not lose it.
func dropTopology(ctx context.Context, s, old *discoveryv1.EndpointSlice) {
	if _, ok := genericapirequest.RequestInfoFrom(ctx); !ok {
		return
	}
	if old != nil && apiequality.Semantic.DeepEqual(old.Endpoints, s.Endpoints) {
		return
	}
	known := topologyNodeNames(old)
	for i := range s.Endpoints {
		ep := &s.Endpoints[i]
		name, ok := ep.DeprecatedTopology[corev1.LabelHostname]
		if ok && ep.NodeName == nil && known.Has(name) && len(apivalidation.NameIsDNSSubdomain(name, false)) == 0 {
			ep.NodeName = &name
		}
		ep.DeprecatedTopology = nil
	}
}

// topologyNodeNames returns the node names in the deprecatedTopology of a slice's endpoints.
func topologyNodeNames(s *discoveryv1.EndpointSlice) sets.Set[string] {
	names := sets.New[string]()
	if s == nil {
		return names
	}
	for _, ep := range s.Endpoints {
		if name := ep.DeprecatedTopology[corev1.LabelHostname]; name != "" {
			names.Insert(name)
		}
	}
	return names
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateEndpointSliceCreate(obj.(*discoveryv1.EndpointSlice))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateEndpointSliceUpdate(obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice))
}

// ValidateDeclaratively is the last validation step, which the generic store runs over all the
// errors of a request: the declared rules of the v1 types, merged as upstream merges them
// (declarative.go).
func (strategy) ValidateDeclaratively(ctx context.Context, obj, old runtime.Object, errs field.ErrorList, _ operation.Type, _ rest.DeclarativeValidationConfig) field.ErrorList {
	var o *discoveryv1.EndpointSlice
	if old != nil {
		o = old.(*discoveryv1.EndpointSlice)
	}
	return mergeDeclarative(ctx, errs, obj.(*discoveryv1.EndpointSlice), o)
}

func (strategy) DeclarativeValidationConfig(context.Context, runtime.Object, runtime.Object) rest.DeclarativeValidationConfig {
	return rest.DeclarativeValidationConfig{}
}

// WarningsOnCreate warns of FQDN slices (deprecated; the "spec." is upstream's, though
// slices have no spec) and of addresses in legacy forms.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	s := obj.(*discoveryv1.EndpointSlice)
	var out []string
	if s.AddressType == discoveryv1.AddressTypeFQDN {
		out = append(out, field.NewPath("spec", "addressType").String()+": FQDN endpoints are deprecated")
	}
	return append(out, ipWarnings(s)...)
}

// WarningsOnUpdate warns of addresses in legacy forms only: an FQDN slice was warned of when
// created.
func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return ipWarnings(obj.(*discoveryv1.EndpointSlice))
}

// The managed-by values of the EndpointSlice controllers (upstream's, and those of
// pkg/controllers/endpointslice and pkg/controllers/endpointslicemirroring).
const (
	sliceControllerName     = "endpointslice-controller.k8s.io"
	mirroringControllerName = "endpointslicemirroring-controller.k8s.io"
)

// ipWarnings are those of addresses in legacy forms. The controllers' slices are skipped, as
// upstream does: they write addresses in canonical form. So are FQDN slices, whose addresses
// are names (upstream checks them too, finds nothing and logs an error for each).
func ipWarnings(s *discoveryv1.EndpointSlice) []string {
	switch s.Labels[discoveryv1.LabelManagedBy] {
	case sliceControllerName, mirroringControllerName:
		return nil
	}
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

// Fields are the fields EndpointSlices can be selected by: metadata only, as upstream.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*discoveryv1.EndpointSlice).ObjectMeta, true)
}
