package rolebinding

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/escalation"
)

// Resource is the rolebindings resource.
var Resource = rbacv1.Resource("rolebindings")

// NewStore returns the role bindings store, which the escalation check of every rbac
// registry reads.
func NewStore(getter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return registry.NewStore(getter, registry.StoreConfig{
		Resource:       Resource,
		Singular:       "rolebinding",
		New:            func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:        func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
}

// REST is the rolebindings endpoint: the store behind the escalation check.
type REST struct {
	*registry.Resource
	guard *escalation.Guard
}

// NewREST returns the rolebindings endpoint over store; guard's Resource is set here.
func NewREST(store *genericregistry.Store, guard escalation.Guard) *REST {
	guard.Resource = Resource
	return &REST{Resource: &registry.Resource{Store: store}, guard: &guard}
}

// Create stores a binding the user may make. The namespace is the URL's: the object's may
// still be empty here.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if !escalation.Allowed(ctx) {
		namespace, ok := genericapirequest.NamespaceFrom(ctx)
		if !ok {
			return nil, apierrors.NewBadRequest("namespace is required")
		}
		b := obj.(*rbacv1.RoleBinding)
		if err := r.guard.Binding(ctx, b.Name, b.RoleRef, namespace); err != nil {
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
			namespace, ok := genericapirequest.NamespaceFrom(ctx)
			if !ok {
				return nil, apierrors.NewBadRequest("namespace is required")
			}
			if escalation.OnlyGCFields(obj, old) {
				return obj, nil
			}
			b := obj.(*rbacv1.RoleBinding)
			return obj, r.guard.Binding(ctx, b.Name, b.RoleRef, namespace)
		})
	}
	return r.Resource.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}
