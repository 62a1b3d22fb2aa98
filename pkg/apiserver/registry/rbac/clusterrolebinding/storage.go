package clusterrolebinding

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/escalation"
)

// Resource is the clusterrolebindings resource.
var Resource = rbacv1.Resource("clusterrolebindings")

// NewStore returns the cluster role bindings store, which the escalation check of every
// rbac registry reads.
func NewStore(getter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return registry.NewStore(getter, registry.StoreConfig{
		Resource:       Resource,
		Singular:       "clusterrolebinding",
		New:            func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:        func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
}

// REST is the clusterrolebindings endpoint: the store behind the escalation check.
type REST struct {
	*registry.Resource
	guard *escalation.Guard
}

// NewREST returns the clusterrolebindings endpoint over store; guard's Resource is set here.
func NewREST(store *genericregistry.Store, guard escalation.Guard) *REST {
	guard.Resource = Resource
	return &REST{Resource: &registry.Resource{Store: store}, guard: &guard}
}

// Create stores a binding the user may make.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if !escalation.Allowed(ctx) {
		b := obj.(*rbacv1.ClusterRoleBinding)
		if err := r.guard.Binding(ctx, b.Name, b.RoleRef, metav1.NamespaceNone); err != nil {
			return nil, err
		}
	}
	return r.Resource.Create(ctx, obj, createValidation, options)
}

// Update stores the new binding if the user may make it; changes of the garbage
// collector's fields alone pass.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if !escalation.Allowed(ctx) {
		objInfo = rest.WrapUpdatedObjectInfo(objInfo, func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
			if escalation.OnlyGCFields(obj, old) {
				return obj, nil
			}
			b := obj.(*rbacv1.ClusterRoleBinding)
			return obj, r.guard.Binding(ctx, b.Name, b.RoleRef, metav1.NamespaceNone)
		})
	}
	return r.Resource.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}
