package endpoints

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of Endpoints.
var Strategy = strategy{registry.Base}

var _ rest.DeclarativeValidationStrategy = Strategy

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// AllowCreateOnUpdate: a PUT may create Endpoints, as kube-apiserver allows.
func (strategy) AllowCreateOnUpdate(context.Context) bool { return true }

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateEndpointsCreate(obj.(*corev1.Endpoints))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateEndpointsUpdate(obj.(*corev1.Endpoints), old.(*corev1.Endpoints))
}

// ValidateDeclaratively is the last validation step, which the generic store runs over all the
// errors of a request (its own metadata checks and the strategy's). Upstream's Endpoints
// strategy runs declarative validation there; its only rules for Endpoints (ObjectMeta's) are
// alpha and never enforced, so what a client sees of the step is apimachinery's merge, which
// drops repeated errors: an update's metadata errors, found by both the store and
// ValidateEndpointsUpdate, are reported once.
func (strategy) ValidateDeclaratively(ctx context.Context, _, _ runtime.Object, errs field.ErrorList, _ operation.Type, _ rest.DeclarativeValidationConfig) field.ErrorList {
	return validate.FilterCoveredHandwrittenErrors(ctx, errs, nil, true)
}

func (strategy) DeclarativeValidationConfig(context.Context, runtime.Object, runtime.Object) rest.DeclarativeValidationConfig {
	return rest.DeclarativeValidationConfig{}
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return warnings(obj.(*corev1.Endpoints))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return warnings(obj.(*corev1.Endpoints))
}

// The label and value the endpoints controller marks its Endpoints with (upstream's and
// pkg/controllers/endpoints').
const (
	managedByLabel = "endpoints.kubernetes.io/managed-by"
	controllerName = "endpoint-controller"
)

// warnings are those of addresses in legacy forms (leading zeros, IPv4-mapped IPv6,
// non-canonical IPv6). The controller's own Endpoints are skipped, as upstream does: it
// writes addresses in canonical form.
func warnings(ep *corev1.Endpoints) []string {
	if ep.Labels[managedByLabel] == controllerName {
		return nil
	}
	var out []string
	subsets := field.NewPath("subsets")
	for i, ss := range ep.Subsets {
		for j, a := range ss.Addresses {
			out = append(out, validation.GetWarningsForIP(subsets.Index(i).Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range ss.NotReadyAddresses {
			out = append(out, validation.GetWarningsForIP(subsets.Index(i).Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
	}
	return out
}

// Fields are the fields Endpoints can be selected by: metadata only, as upstream.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*corev1.Endpoints).ObjectMeta, true)
}
