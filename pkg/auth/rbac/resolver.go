package rbac

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// The resolver reads roles and bindings through these: the authorizer through the API
// server's informers, the escalation check of the rbac registries through the stores
// themselves, so that a role created a moment ago is already seen.
type (
	RoleGetter interface {
		GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error)
	}
	RoleBindingLister interface {
		ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error)
	}
	ClusterRoleGetter interface {
		GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
	}
	ClusterRoleBindingLister interface {
		ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error)
	}
)

// Visitor is called with each rule that applies to a user, with where it comes from, or with
// an error met while resolving; it returns false to stop.
type Visitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// Resolver finds the rules that apply to a user: those of the roles bound to the user, a
// group of the user, or (for system:serviceaccount:NS:NAME) the service account, by
// ClusterRoleBindings everywhere and by RoleBindings in the namespace asked about.
type Resolver struct {
	Roles               RoleGetter
	RoleBindings        RoleBindingLister
	ClusterRoles        ClusterRoleGetter
	ClusterRoleBindings ClusterRoleBindingLister
}

// RulesFor returns every rule that applies to u in namespace ("" for cluster-wide rules
// only), and the errors met on the way; the rules found are returned with them.
func (r *Resolver) RulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	r.VisitRulesFor(ctx, u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// VisitRulesFor calls visit with each rule that applies to u in namespace: first those of the
// ClusterRoleBindings, then those of the namespace's RoleBindings.
func (r *Resolver) VisitRulesFor(ctx context.Context, u user.Info, namespace string, visit Visitor) {
	clusterBindings, err := r.ClusterRoleBindings.ListClusterRoleBindings(ctx)
	if err != nil {
		if !visit(nil, nil, err) {
			return
		}
	}
	for _, b := range clusterBindings {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := r.GetRoleReferenceRules(ctx, b.RoleRef, "")
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		source := clusterRoleBindingSource{binding: b, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(source, &rules[j], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	bindings, err := r.RoleBindings.ListRoleBindings(ctx, namespace)
	if err != nil {
		visit(nil, nil, err)
		return
	}
	for _, b := range bindings {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := r.GetRoleReferenceRules(ctx, b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		source := roleBindingSource{binding: b, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(source, &rules[j], nil) {
				return
			}
		}
	}
}

// GetRoleReferenceRules returns the rules of the role a binding in namespace refers to.
func (r *Resolver) GetRoleReferenceRules(ctx context.Context, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		role, err := r.Roles.GetRole(ctx, namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	case "ClusterRole":
		role, err := r.ClusterRoles.GetClusterRole(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// appliesTo returns the index of the first subject that is u.
func appliesTo(u user.Info, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		if subjectIs(u, &subjects[i], namespace) {
			return i, true
		}
	}
	return 0, false
}

// subjectIs reports whether s names u. A service account without a namespace is the one of
// the binding's namespace; in a ClusterRoleBinding it names nobody.
func subjectIs(u user.Info, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.GetGroups(), s.Name)
	case rbacv1.ServiceAccountKind:
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return ns != "" && serviceaccount.MatchesUsername(ns, s.Name, u.GetName())
	}
	return false
}

// The sources name a rule's binding in the authorizer's reasons, in upstream's words.
type clusterRoleBindingSource struct {
	binding *rbacv1.ClusterRoleBinding
	subject *rbacv1.Subject
}

func (s clusterRoleBindingSource) String() string {
	return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s",
		s.binding.Name, s.binding.RoleRef.Kind, s.binding.RoleRef.Name, describeSubject(s.subject, ""))
}

type roleBindingSource struct {
	binding *rbacv1.RoleBinding
	subject *rbacv1.Subject
}

func (s roleBindingSource) String() string {
	return fmt.Sprintf("RoleBinding %q of %s %q to %s",
		s.binding.Name+"/"+s.binding.Namespace, s.binding.RoleRef.Kind, s.binding.RoleRef.Name,
		describeSubject(s.subject, s.binding.Namespace))
}

func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}
