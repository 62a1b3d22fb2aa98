package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestRuleAllows(t *testing.T) {
	podsStatus := rbacv1.PolicyRule{Verbs: []string{"get", "patch"}, APIGroups: []string{""}, Resources: []string{"pods/status"}}
	anyStatus := rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*/status"}}
	named := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"berth-scheduler"}}
	healthz := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/livez/*"}}
	res := func(verb, group, resource, sub, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name, ResourceRequest: true}
	}
	path := func(verb, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{Verb: verb, Path: p}
	}
	for _, tc := range []struct {
		name string
		rule rbacv1.PolicyRule
		a    authorizer.AttributesRecord
		want bool
	}{
		{"subresource", podsStatus, res("patch", "", "pods", "status", "web"), true},
		{"not the resource itself", podsStatus, res("get", "", "pods", "", "web"), false},
		{"not another verb", podsStatus, res("delete", "", "pods", "status", "web"), false},
		{"not another group", podsStatus, res("get", "apps", "pods", "status", "web"), false},
		{"any resource's status", anyStatus, res("update", "apps", "deployments", "status", ""), true},
		{"any resource's status, not the resource", anyStatus, res("update", "apps", "deployments", "", ""), false},
		{"named", named, res("get", "coordination.k8s.io", "leases", "", "berth-scheduler"), true},
		{"another name", named, res("get", "coordination.k8s.io", "leases", "", "other"), false},
		{"a list has no name", named, res("get", "coordination.k8s.io", "leases", "", ""), false},
		{"path", healthz, path("get", "/healthz"), true},
		{"path prefix", healthz, path("get", "/livez/etcd"), true},
		{"not a longer path", healthz, path("get", "/healthz/etcd"), false},
		{"a resource rule matches no path", podsStatus, path("get", "/api"), false},
		{"a path rule matches no resource", healthz, res("get", "", "pods", "", ""), false},
	} {
		if got := RuleAllows(tc.a, &tc.rule); got != tc.want {
			t.Errorf("%s: RuleAllows = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !RulesAllow(res("get", "", "pods", "status", ""), healthz, podsStatus) {
		t.Error("RulesAllow: one of the rules allows it")
	}
}
