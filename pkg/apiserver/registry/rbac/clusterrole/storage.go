package clusterrole

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

// Resource is the cluster roles resource.
var Resource = rbacv1.Resource("clusterroles")

// tableConvertor gives upstream's columns, which are the generic ones: NAME and CREATED AT.
var tableConvertor = rest.NewDefaultTableConvertor(Resource)

// NewStore returns the cluster roles store, which the escalation check of every rbac registry reads.
func NewStore(getter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return registry.NewStore(getter, registry.StoreConfig{
		Resource:       Resource,
		Singular:       "clusterrole",
		New:            func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:        func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: tableConvertor,
	})
}

// REST is the cluster roles endpoint: the store behind the escalation check.
type REST struct {
	*registry.Resource
	guard *escalation.Guard
}

// NewREST returns the cluster roles endpoint over store; guard's Resource is set here.
func NewREST(store *genericregistry.Store, guard escalation.Guard) *REST {
	guard.Resource = Resource
	return &REST{Resource: &registry.Resource{Store: store}, guard: &guard}
}

// Create stores a cluster role the user may write.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if !r.guard.MayEscalateRole(ctx) {
		role := obj.(*rbacv1.ClusterRole)
		if err := r.guard.Role(ctx, role.Name, role.Rules, aggregates(role)); err != nil {
			return nil, err
		}
	}
	return r.Resource.Create(ctx, obj, createValidation, options)
}

// Update stores the new cluster role if the user may write it; changes of the garbage collector's
// fields alone pass.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if !r.guard.MayEscalateRole(ctx) {
		objInfo = rest.WrapUpdatedObjectInfo(objInfo, func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
			if escalation.OnlyGCFields(obj, old) {
				return obj, nil
			}
			role := obj.(*rbacv1.ClusterRole)
			return obj, r.guard.Role(ctx, role.Name, role.Rules, aggregates(role) || aggregates(old.(*rbacv1.ClusterRole)))
		})
	}
	return r.Resource.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}

// aggregates reports whether a cluster role gathers the rules of others: setting or
// changing that can gather anything, so the check asks for every permission.
func aggregates(role *rbacv1.ClusterRole) bool {
	return role.AggregationRule != nil && len(role.AggregationRule.ClusterRoleSelectors) > 0
}
