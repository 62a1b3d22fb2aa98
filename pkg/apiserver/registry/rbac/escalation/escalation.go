// Package escalation is the check the rbac registries make before they store a role or a
// binding: nobody may grant permissions they do not hold, unless they may `escalate` the
// role or `bind` the role referred to, or are system:masters. It runs in the store step of
// "decode → default → validate → admit → store", after admission, with the request's user.
package escalation

import (
	"context"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// FullAuthority is every permission: what a ClusterRole's aggregationRule may gather.
var FullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// Allowed reports whether the request's user is system:masters, who may grant anything:
// the API server's own loopback client is one.
func Allowed(ctx context.Context) bool {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// RoleEscalationAuthorized reports whether the user may `escalate` the role or cluster role
// the request writes.
func RoleEscalationAuthorized(ctx context.Context, a authorizer.UnconditionalAuthorizer) bool {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok || a == nil {
		return false
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok || !info.IsResourceRequest || info.APIGroup != rbacv1.GroupName ||
		(info.Resource != "roles" && info.Resource != "clusterroles") {
		return false
	}
	attrs := authorizer.AttributesRecord{
		User: u, Verb: "escalate", APIGroup: info.APIGroup, APIVersion: "*", Resource: info.Resource,
		Name: info.Name, Namespace: info.Namespace, ResourceRequest: true,
	}
	return authorized(ctx, a, attrs)
}

// BindingAuthorized reports whether the user may `bind` the role ref refers to in the
// binding's namespace ("" for a ClusterRoleBinding), which lets a user hand out a role
// without holding it.
func BindingAuthorized(ctx context.Context, a authorizer.UnconditionalAuthorizer, ref rbacv1.RoleRef, namespace string) bool {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok || a == nil {
		return false
	}
	attrs := authorizer.AttributesRecord{
		User: u, Verb: "bind", Namespace: namespace, APIGroup: ref.APIGroup, APIVersion: "*",
		Name: ref.Name, ResourceRequest: true,
	}
	switch ref.Kind {
	case "ClusterRole":
		attrs.Resource = "clusterroles"
	case "Role":
		attrs.Resource = "roles"
	default:
		return false
	}
	return authorized(ctx, a, attrs)
}

func authorized(ctx context.Context, a authorizer.UnconditionalAuthorizer, attrs authorizer.AttributesRecord) bool {
	decision, _, err := a.Authorize(ctx, attrs)
	if err != nil {
		klog.ErrorS(err, "Authorizing an RBAC write", "user", attrs.User.GetName(), "verb", attrs.Verb,
			"resource", attrs.Resource, "name", attrs.Name, "namespace", attrs.Namespace)
	}
	return decision == authorizer.DecisionAllow
}

// OnlyGCFields reports whether an update changes nothing but what the garbage collector
// changes (owner references, finalizers), which needs no escalation check: the collector
// must be able to delete any role.
func OnlyGCFields(obj, old runtime.Object) bool {
	if old == nil || reflect.ValueOf(old).IsNil() {
		return false
	}
	copied := obj.DeepCopyObject()
	cm, err := meta.Accessor(copied)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetSelfLink(om.GetSelfLink())
	cm.SetManagedFields(om.GetManagedFields())
	return equality.Semantic.DeepEqual(copied, old)
}
