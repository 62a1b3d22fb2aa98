// Package resourcequota is the registry of core/v1 ResourceQuotas: their defaults,
// validation, strategies, table and storage, with the status subresource. The spec is the
// user's (hard limits and the scopes they apply to); the status is the resource-quota
// controller's (pkg/controllers/resourcequota: status.hard copied from spec.hard, status.used
// counted), which the ResourceQuota admission plugin then enforces.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /api/v1/namespaces/{ns}/resourcequotas and its status.
package resourcequota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolumeclaim"
)

// Storage holds the endpoints of quotas.
type Storage struct {
	ResourceQuota *registry.Resource
	Status        *registry.SubresourceREST
}

// NewStorage returns the resourcequotas endpoint and its status subresource.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("resourcequotas"),
		Singular:       "resourcequota",
		New:            func() runtime.Object { return &corev1.ResourceQuota{} },
		NewList:        func() runtime.Object { return &corev1.ResourceQuotaList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		ResourceQuota: &registry.Resource{Store: store, Short: []string{"quota"}},
		Status:        registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// SetDefaults rounds every quantity of the hard limits and the status up to milli-units, as
// upstream's v1 defaulting of resource lists does.
func SetDefaults(q *corev1.ResourceQuota) {
	persistentvolumeclaim.RoundUpQuantities(q.Spec.Hard, q.Status.Hard, q.Status.Used)
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of quotas: a new quota starts with no
// status, and a spec update keeps the status.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.ResourceQuota).Status = old.(*corev1.ResourceQuota).Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateResourceQuota(obj.(*corev1.ResourceQuota))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateResourceQuotaUpdate(obj.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of resourcequotas/status, which keeps the spec.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.ResourceQuota).Spec = old.(*corev1.ResourceQuota).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateResourceQuotaStatusUpdate(obj.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec")
}

// Fields are the fields quotas can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*corev1.ResourceQuota).ObjectMeta, true)
}
