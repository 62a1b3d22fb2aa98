package rbac

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/klog/v2"
)

// Authorizer allows a request when a rule bound to its user allows it, and otherwise has no
// opinion: RBAC never denies, a later authorizer may still allow.
type Authorizer struct {
	resolver *Resolver
}

var (
	_ authorizer.Authorizer   = &Authorizer{}
	_ authorizer.RuleResolver = &Authorizer{}
)

// New returns the RBAC authorizer over the given roles and bindings.
func New(r *Resolver) *Authorizer { return &Authorizer{resolver: r} }

// NewFromListers returns the RBAC authorizer reading the informers' caches.
func NewFromListers(roles rbaclisters.RoleLister, roleBindings rbaclisters.RoleBindingLister,
	clusterRoles rbaclisters.ClusterRoleLister, clusterRoleBindings rbaclisters.ClusterRoleBindingLister) *Authorizer {
	return New(ListerResolver(roles, roleBindings, clusterRoles, clusterRoleBindings))
}

// ListerResolver resolves rules from the informers' caches.
func ListerResolver(roles rbaclisters.RoleLister, roleBindings rbaclisters.RoleBindingLister,
	clusterRoles rbaclisters.ClusterRoleLister, clusterRoleBindings rbaclisters.ClusterRoleBindingLister) *Resolver {
	return &Resolver{
		Roles:               roleLister{roles},
		RoleBindings:        roleBindingLister{roleBindings},
		ClusterRoles:        clusterRoleLister{clusterRoles},
		ClusterRoleBindings: clusterRoleBindingLister{clusterRoleBindings},
	}
}

// Authorize allows the request if any rule that applies to its user in its namespace allows
// it, naming the binding in the reason. When none does, the reason carries the errors met
// (a binding to a role that does not exist), as upstream's does.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetUser() == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	var reason string
	var errs []error
	a.resolver.VisitRulesFor(ctx, attrs.GetUser(), attrs.GetNamespace(), func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			reason = "RBAC: allowed by " + source.String()
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if reason != "" {
		return authorizer.DecisionAllow, reason, nil
	}
	klog.V(5).InfoS("RBAC: no rule allows the request", "user", attrs.GetUser().GetName(), "groups", attrs.GetUser().GetGroups(),
		"verb", attrs.GetVerb(), "resource", attrs.GetResource(), "subresource", attrs.GetSubresource(), "apiGroup", attrs.GetAPIGroup(),
		"path", attrs.GetPath(), "namespace", attrs.GetNamespace())
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize is Authorize: RBAC's decisions carry no conditions.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed, as an authorizer without conditions must.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor lists u's rules in namespace for a SelfSubjectRulesReview. RBAC knows all of its
// rules, so the list is never incomplete; errors met come back beside the rules found.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules, err := a.resolver.RulesFor(ctx, u, namespace)
	var resourceRules []authorizer.ResourceRuleInfo
	var nonResourceRules []authorizer.NonResourceRuleInfo
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	return resourceRules, nonResourceRules, false, err
}

type roleLister struct{ l rbaclisters.RoleLister }

func (l roleLister) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	return l.l.Roles(namespace).Get(name)
}

type roleBindingLister struct{ l rbaclisters.RoleBindingLister }

func (l roleBindingLister) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return l.l.RoleBindings(namespace).List(labels.Everything())
}

type clusterRoleLister struct{ l rbaclisters.ClusterRoleLister }

func (l clusterRoleLister) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	return l.l.Get(name)
}

type clusterRoleBindingLister struct {
	l rbaclisters.ClusterRoleBindingLister
}

func (l clusterRoleBindingLister) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return l.l.List(labels.Everything())
}
