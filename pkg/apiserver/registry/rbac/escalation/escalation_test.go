package escalation

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/berth-cluster/berth/pkg/auth/rbac"
)

// static is one user's cluster-wide rules: a ClusterRole bound to the user.
type static struct {
	user  string
	rules []rbacv1.PolicyRule
}

func (s static) GetRole(context.Context, string, string) (*rbacv1.Role, error) {
	return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), "x")
}
func (s static) ListRoleBindings(context.Context, string) ([]*rbacv1.RoleBinding, error) {
	return nil, nil
}
func (s static) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	switch name {
	case "held":
		return &rbacv1.ClusterRole{Rules: s.rules}, nil
	case "admin":
		return &rbacv1.ClusterRole{Rules: FullAuthority}, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), name)
}
func (s static) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return []*rbacv1.ClusterRoleBinding{{
		ObjectMeta: metav1.ObjectMeta{Name: "held"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "held"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: s.user}},
	}}, nil
}

func guard(rules ...rbacv1.PolicyRule) *Guard {
	s := static{user: "jane", rules: rules}
	r := &rbac.Resolver{Roles: s, RoleBindings: s, ClusterRoles: s, ClusterRoleBindings: s}
	return &Guard{Resource: rbacv1.Resource("rolebindings"), Authorizer: rbac.New(r), Resolver: r}
}

func requestContext(name string, groups []string, info *genericapirequest.RequestInfo) context.Context {
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name, Groups: groups})
	if info != nil {
		ctx = genericapirequest.WithRequestInfo(ctx, info)
		ctx = genericapirequest.WithNamespace(ctx, info.Namespace)
	}
	return ctx
}

var readPods = rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}

func TestAllowed(t *testing.T) {
	if !Allowed(requestContext("admin", []string{user.SystemPrivilegedGroup}, nil)) {
		t.Error("system:masters may escalate")
	}
	if Allowed(requestContext("jane", []string{"devs"}, nil)) || Allowed(context.Background()) {
		t.Error("others may not")
	}
}

func TestBinding(t *testing.T) {
	ctx := requestContext("jane", nil, &genericapirequest.RequestInfo{IsResourceRequest: true, APIGroup: rbacv1.GroupName, Resource: "rolebindings", Namespace: "ns"})
	g := guard(readPods)
	if err := g.Binding(ctx, "b", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "held"}, "ns"); err != nil {
		t.Errorf("binding a role jane holds: %v", err)
	}
	err := g.Binding(ctx, "b", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}, "ns")
	want := `rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "jane" (groups=[]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("binding admin: %v\nwant %s", err, want)
	}
	if err := g.Binding(ctx, "b", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ghost"}, "ns"); !apierrors.IsNotFound(err) {
		t.Errorf("binding a missing role: %v, want its 404", err)
	}
	// `bind` on the cluster role lets jane hand it out without holding it.
	g = guard(readPods, rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"admin"}})
	if err := g.Binding(ctx, "b", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}, "ns"); err != nil {
		t.Errorf("binding admin with bind: %v", err)
	}
	if BindingAuthorized(ctx, g.Authorizer, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "admin"}, "ns") {
		t.Error("bind on the cluster role allowed binding a Role of that name")
	}
}

func TestRole(t *testing.T) {
	info := &genericapirequest.RequestInfo{IsResourceRequest: true, APIGroup: rbacv1.GroupName, Resource: "roles", Namespace: "ns", Name: "r"}
	ctx := requestContext("jane", []string{"devs"}, info)
	g := guard(readPods)
	g.Resource = rbacv1.Resource("roles")
	if g.MayEscalateRole(ctx) {
		t.Error("jane may not escalate")
	}
	if err := g.Role(ctx, "r", []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"web"}}}, false); err != nil {
		t.Errorf("a role within jane's rules: %v", err)
	}
	err := g.Role(ctx, "r", []rbacv1.PolicyRule{{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, false)
	if !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), `roles.rbac.authorization.k8s.io "r" is forbidden: user "jane" (groups=["devs"]) is attempting to grant`) {
		t.Errorf("a role beyond jane's rules: %v", err)
	}
	err = g.Role(ctx, "r", nil, true)
	if !apierrors.IsForbidden(err) || !strings.HasSuffix(err.Error(), "must have cluster-admin privileges to use the aggregationRule") {
		t.Errorf("an aggregating role: %v", err)
	}
	g = guard(readPods, rbacv1.PolicyRule{Verbs: []string{"escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}})
	if !g.MayEscalateRole(ctx) {
		t.Error("escalate on roles lets jane write any role")
	}
	clusterCtx := requestContext("jane", nil, &genericapirequest.RequestInfo{IsResourceRequest: true, APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: "r"})
	if g.MayEscalateRole(clusterCtx) {
		t.Error("escalate on roles is not escalate on clusterroles")
	}
	if RoleEscalationAuthorized(requestContext("jane", nil, &genericapirequest.RequestInfo{IsResourceRequest: true, APIGroup: "", Resource: "pods"}), g.Authorizer) {
		t.Error("escalate means nothing outside roles and clusterroles")
	}
	if !guard(readPods).MayEscalateRole(requestContext("admin", []string{user.SystemPrivilegedGroup}, info)) {
		t.Error("system:masters may write any role")
	}
}

func TestOnlyGCFields(t *testing.T) {
	old := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{readPods}}
	gc := old.DeepCopy()
	gc.Finalizers = []string{"foregroundDeletion"}
	gc.OwnerReferences = []metav1.OwnerReference{{Name: "owner"}}
	if !OnlyGCFields(gc, old) {
		t.Error("finalizers and owners only")
	}
	more := gc.DeepCopy()
	more.Rules[0].Verbs = []string{"*"}
	if OnlyGCFields(more, old) {
		t.Error("a rule change is more than the collector's")
	}
	if OnlyGCFields(gc, (*rbacv1.Role)(nil)) {
		t.Error("no old object")
	}
}
