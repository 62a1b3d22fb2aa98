package endpoints

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of Endpoints.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// AllowCreateOnUpdate: a PUT may create Endpoints, as kube-apiserver allows.
func (strategy) AllowCreateOnUpdate(context.Context) bool { return true }

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateEndpoints(obj.(*corev1.Endpoints), nil)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateEndpointsUpdate(obj.(*corev1.Endpoints), old.(*corev1.Endpoints))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return warnings(obj.(*corev1.Endpoints))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return warnings(obj.(*corev1.Endpoints))
}

// ManagedByLabel and ControllerName mark the Endpoints the endpoints controller writes.
const (
	ManagedByLabel = "endpoints.kubernetes.io/managed-by"
	ControllerName = "endpoint-controller"
)

// warnings are those of IPs in non-canonical forms, except on the controller's own objects.
func warnings(ep *corev1.Endpoints) []string {
	if ep.Labels[ManagedByLabel] == ControllerName {
		return nil
	}
	var out []string
	for i, ss := range ep.Subsets {
		for j, a := range ss.Addresses {
			out = append(out, validation.GetWarningsForIP(field.NewPath("subsets").Index(i).Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range ss.NotReadyAddresses {
			out = append(out, validation.GetWarningsForIP(field.NewPath("subsets").Index(i).Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
	}
	return out
}

// Fields are the fields Endpoints can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*corev1.Endpoints).ObjectMeta, true)
}
