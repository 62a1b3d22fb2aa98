package rbac

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
)

// policy is an in-memory set of roles and bindings, standing in for the informers' listers.
type policy struct {
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

func (p *policy) resolver() *Resolver {
	return &Resolver{Roles: p, RoleBindings: p, ClusterRoles: p, ClusterRoleBindings: p}
}

func (p *policy) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	for _, r := range p.roles {
		if r.Namespace == namespace && r.Name == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("role.rbac.authorization.k8s.io %q not found", name)
}

func (p *policy) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	for _, r := range p.clusterRoles {
		if r.Name == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("clusterrole.rbac.authorization.k8s.io %q not found", name)
}

func (p *policy) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	var out []*rbacv1.RoleBinding
	for _, b := range p.roleBindings {
		if b.Namespace == namespace {
			out = append(out, b)
		}
	}
	return out, nil
}

func (p *policy) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return p.clusterRoleBindings, nil
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	r := &rbacv1.Role{Rules: rules}
	r.Namespace, r.Name = ns, name
	return r
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{Rules: rules}
	r.Name = name
	return r
}

func roleBinding(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	b := &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}, Subjects: subjects}
	b.Namespace, b.Name = ns, name
	return b
}

func clusterRoleBinding(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName}, Subjects: subjects}
	b.Name = name
	return b
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func saSubject(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func s(v ...string) []string { return v }
