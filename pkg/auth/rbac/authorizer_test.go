package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func testPolicy() *policy {
	readPods := rule(s("get", "list", "watch"), s(""), s("pods"))
	return &policy{
		roles: []*rbacv1.Role{
			role("ns1", "pod-reader", readPods),
			role("ns2", "pod-reader", readPods),
		},
		clusterRoles: []*rbacv1.ClusterRole{
			clusterRole("node-reader", rule(s("get"), s(""), s("nodes"))),
			clusterRole("healthz", rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/healthz")}),
			clusterRole("secret-writer", rule(s("create"), s(""), s("secrets"))),
		},
		roleBindings: []*rbacv1.RoleBinding{
			roleBinding("ns1", "readers", "Role", "pod-reader", userSubject("jane"), groupSubject("devs"), saSubject("", "robot")),
			// A RoleBinding to a ClusterRole grants its rules in the binding's namespace only.
			roleBinding("ns2", "secrets", "ClusterRole", "secret-writer", saSubject("ns1", "robot")),
			roleBinding("ns2", "dangling", "Role", "gone", userSubject("jane")),
		},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			clusterRoleBinding("nodes", "node-reader", groupSubject("ops")),
			clusterRoleBinding("health", "healthz", groupSubject(user.AllAuthenticated)),
			// A service account without a namespace in a ClusterRoleBinding names nobody.
			clusterRoleBinding("nobody", "node-reader", saSubject("", "robot")),
		},
	}
}

func TestAuthorize(t *testing.T) {
	a := New(testPolicy().resolver())
	jane := &user.DefaultInfo{Name: "jane", Groups: []string{user.AllAuthenticated}}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"devs", "ops", user.AllAuthenticated}}
	robot := &user.DefaultInfo{Name: "system:serviceaccount:ns1:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"}}
	res := func(u user.Info, verb, ns, resource, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: ns, Resource: resource, Name: name, ResourceRequest: true}
	}
	for _, tc := range []struct {
		name   string
		attrs  authorizer.AttributesRecord
		allow  bool
		reason string
	}{
		{"user by RoleBinding", res(jane, "list", "ns1", "pods", ""), true,
			`RBAC: allowed by RoleBinding "readers/ns1" of Role "pod-reader" to User "jane"`},
		{"not in another namespace, and the dangling binding's error is the reason", res(jane, "list", "ns2", "pods", ""), false,
			`RBAC: role.rbac.authorization.k8s.io "gone" not found`},
		{"not cluster-wide", res(jane, "list", "", "pods", ""), false, ""},
		{"not another verb", res(jane, "delete", "ns1", "pods", "web"), false, ""},
		{"group by RoleBinding", res(bob, "get", "ns1", "pods", "web"), true,
			`RBAC: allowed by RoleBinding "readers/ns1" of Role "pod-reader" to Group "devs"`},
		{"group by ClusterRoleBinding, in any namespace", res(bob, "get", "ns9", "nodes", "n1"), true,
			`RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to Group "ops"`},
		{"group by ClusterRoleBinding, cluster-wide", res(bob, "get", "", "nodes", "n1"), true,
			`RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to Group "ops"`},
		{"service account of the binding's namespace", res(robot, "watch", "ns1", "pods", ""), true,
			`RBAC: allowed by RoleBinding "readers/ns1" of Role "pod-reader" to ServiceAccount "robot/ns1"`},
		{"service account by a ClusterRole in another namespace", res(robot, "create", "ns2", "secrets", ""), true,
			`RBAC: allowed by RoleBinding "secrets/ns2" of ClusterRole "secret-writer" to ServiceAccount "robot/ns1"`},
		{"that ClusterRole only where bound", res(robot, "create", "ns1", "secrets", ""), false, ""},
		{"a namespace-less service account in a ClusterRoleBinding", res(robot, "get", "", "nodes", "n1"), false, ""},
		{"a user named like a service account is one", res(&user.DefaultInfo{Name: "system:serviceaccount:ns1:robot"}, "list", "ns1", "pods", ""), true,
			`RBAC: allowed by RoleBinding "readers/ns1" of Role "pod-reader" to ServiceAccount "robot/ns1"`},
		{"non-resource URL", authorizer.AttributesRecord{User: jane, Verb: "get", Path: "/healthz"}, true,
			`RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "healthz" to Group "system:authenticated"`},
		{"no user", authorizer.AttributesRecord{Verb: "get", Path: "/healthz"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			want := authorizer.DecisionNoOpinion
			if tc.allow {
				want = authorizer.DecisionAllow
			}
			if d != want || reason != tc.reason {
				t.Errorf("got %v %q, want %v %q", d, reason, want, tc.reason)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	a := New(testPolicy().resolver())
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"devs", user.AllAuthenticated}}
	resources, nonResources, incomplete, err := a.RulesFor(context.Background(), bob, "ns1")
	if err != nil || incomplete {
		t.Fatalf("err %v, incomplete %v", err, incomplete)
	}
	if len(resources) != 1 || resources[0].GetResources()[0] != "pods" || len(resources[0].GetVerbs()) != 3 {
		t.Errorf("resource rules %+v, want the pod reader's", resources)
	}
	if len(nonResources) != 1 || nonResources[0].GetNonResourceURLs()[0] != "/healthz" {
		t.Errorf("non-resource rules %+v, want /healthz", nonResources)
	}
	// Errors come back beside the rules found.
	jane := &user.DefaultInfo{Name: "jane"}
	resources, _, _, err = a.RulesFor(context.Background(), jane, "ns2")
	if err == nil || err.Error() != `role.rbac.authorization.k8s.io "gone" not found` || len(resources) != 0 {
		t.Errorf("jane in ns2: %+v, %v", resources, err)
	}
	// Cluster-wide, only the ClusterRoleBindings count.
	if rules, err := a.resolver.RulesFor(context.Background(), bob, ""); err != nil || len(rules) != 1 {
		t.Errorf("bob cluster-wide: %+v, %v; want /healthz alone", rules, err)
	}
}

func TestVisitRulesForStops(t *testing.T) {
	r := testPolicy().resolver()
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"devs", "ops", user.AllAuthenticated}}
	visits := 0
	r.VisitRulesFor(context.Background(), bob, "ns1", func(_ fmt.Stringer, _ *rbacv1.PolicyRule, _ error) bool {
		visits++
		return false
	})
	if visits != 1 {
		t.Errorf("visited %d rules after the visitor said stop", visits)
	}
}
