package role

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

// Resource is the roles resource.
var Resource = rbacv1.Resource("roles")

// tableConvertor gives upstream's columns, which are the generic ones: NAME and CREATED AT.
var tableConvertor = rest.NewDefaultTableConvertor(Resource)

// NewStore returns the roles store, which the escalation check of every rbac registry reads.
func NewStore(getter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return registry.NewStore(getter, registry.StoreConfig{
		Resource:       Resource,
		Singular:       "role",
		New:            func() runtime.Object { return &rbacv1.Role{} },
		NewList:        func() runtime.Object { return &rbacv1.RoleList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: tableConvertor,
	})
}

// REST is the roles endpoint: the store behind the escalation check.
type REST struct {
	*registry.Resource
	guard *escalation.Guard
}

// NewREST returns the roles endpoint over store; guard's Resource is set here.
func NewREST(store *genericregistry.Store, guard escalation.Guard) *REST {
	guard.Resource = Resource
	return &REST{Resource: &registry.Resource{Store: store}, guard: &guard}
}

// Create stores a role the user may write.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if !r.guard.MayEscalateRole(ctx) {
		role := obj.(*rbacv1.Role)
		if err := r.guard.Role(ctx, role.Name, role.Rules, false); err != nil {
			return nil, err
		}
	}
	return r.Resource.Create(ctx, obj, createValidation, options)
}

// Update stores the new role if the user may write it; changes of the garbage collector's
// fields alone pass.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if !r.guard.MayEscalateRole(ctx) {
		objInfo = rest.WrapUpdatedObjectInfo(objInfo, func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
			if escalation.OnlyGCFields(obj, old) {
				return obj, nil
			}
			role := obj.(*rbacv1.Role)
			return obj, r.guard.Role(ctx, role.Name, role.Rules, false)
		})
	}
	return r.Resource.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}
