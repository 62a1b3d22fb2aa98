package escalation

import (
	"context"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/auth/rbac"
)

// Rules is what the check reads of the roles and bindings: the rules a user holds and the
// rules of a role a binding refers to (a *rbac.Resolver).
type Rules interface {
	rbac.RulesLister
	GetRoleReferenceRules(ctx context.Context, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error)
}

// Guard makes the escalation check for one resource's writes.
type Guard struct {
	// Resource names the resource in the 403 ("roles.rbac.authorization.k8s.io").
	Resource schema.GroupResource
	// Authorizer answers whether the user may `escalate` or `bind`.
	Authorizer authorizer.UnconditionalAuthorizer
	Resolver   Rules
}

var errAggregation = errors.New("must have cluster-admin privileges to use the aggregationRule")

// MayEscalateRole reports whether the user may write any role without the rule check:
// system:masters, or `escalate` on the role.
func (g *Guard) MayEscalateRole(ctx context.Context) bool {
	return Allowed(ctx) || RoleEscalationAuthorized(ctx, g.Authorizer)
}

// Role checks that the user holds every rule of the role named name; a cluster role that
// aggregates others may gather anything, so it needs every permission.
func (g *Guard) Role(ctx context.Context, name string, rules []rbacv1.PolicyRule, aggregates bool) error {
	if err := rbac.ConfirmNoEscalation(ctx, g.Resolver, rules); err != nil {
		return apierrors.NewForbidden(g.Resource, name, err)
	}
	if aggregates {
		if err := rbac.ConfirmNoEscalation(ctx, g.Resolver, FullAuthority); err != nil {
			return apierrors.NewForbidden(g.Resource, name, errAggregation)
		}
	}
	return nil
}

// Binding checks that the user may bind the role ref refers to, or holds all its rules, in
// namespace ("" for a ClusterRoleBinding). A role that does not exist fails with its 404.
func (g *Guard) Binding(ctx context.Context, name string, ref rbacv1.RoleRef, namespace string) error {
	if BindingAuthorized(ctx, g.Authorizer, ref, namespace) {
		return nil
	}
	rules, err := g.Resolver.GetRoleReferenceRules(ctx, ref, namespace)
	if err != nil {
		return err
	}
	if err := rbac.ConfirmNoEscalation(ctx, g.Resolver, rules); err != nil {
		return apierrors.NewForbidden(g.Resource, name, err)
	}
	return nil
}

// StoreResolver resolves rules by reading the rbac stores directly, as upstream's registries
// do: a role created a moment ago counts before the informers have seen it.
func StoreResolver(roles, roleBindings, clusterRoles, clusterRoleBindings Store) *rbac.Resolver {
	return &rbac.Resolver{
		Roles:               storeReader{roles},
		RoleBindings:        storeReader{roleBindings},
		ClusterRoles:        storeReader{clusterRoles},
		ClusterRoleBindings: storeReader{clusterRoleBindings},
	}
}

// Store is what StoreResolver reads of a store.
type Store interface {
	rest.Getter
	rest.Lister
}

type storeReader struct{ s Store }

func (r storeReader) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	obj, err := r.s.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.Role), nil
}

func (r storeReader) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	obj, err := r.s.Get(genericapirequest.WithNamespace(ctx, ""), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.ClusterRole), nil
}

func (r storeReader) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	obj, err := r.s.List(genericapirequest.WithNamespace(ctx, namespace), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	list := obj.(*rbacv1.RoleBindingList)
	out := make([]*rbacv1.RoleBinding, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (r storeReader) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	obj, err := r.s.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	list := obj.(*rbacv1.ClusterRoleBindingList)
	out := make([]*rbacv1.ClusterRoleBinding, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
