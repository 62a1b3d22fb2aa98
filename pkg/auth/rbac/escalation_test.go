package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestConfirmNoEscalation(t *testing.T) {
	r := testPolicy().resolver()
	ctx := func(name, ns string, groups ...string) context.Context {
		c := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name, Groups: groups})
		return genericapirequest.WithNamespace(c, ns)
	}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		rules []rbacv1.PolicyRule
		want  string
	}{
		{"rules held", ctx("jane", "ns1"), []rbacv1.PolicyRule{rule(s("get", "list"), s(""), s("pods"))}, ""},
		{"rules held in another namespace only", ctx("jane", "ns3", "system:authenticated"), []rbacv1.PolicyRule{rule(s("get", "list"), s(""), s("pods"))},
			`user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{"missing rules compacted and sorted", ctx("jane", "ns1"), []rbacv1.PolicyRule{
			rule(s("get", "delete"), s(""), s("secrets")),
			rule(s("list", "delete"), s(""), s("pods")),
			{Verbs: s("get"), NonResourceURLs: s("/metrics")},
			{Verbs: s("get"), APIGroups: s(""), Resources: s("configmaps"), ResourceNames: s("a")},
		}, `user "jane" (groups=[]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], ResourceNames:["a"], Verbs:["get"]}
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}
{NonResourceURLs:["/metrics"], Verbs:["get"]}`},
		{"resolution errors are named", ctx("jane", "ns2"), []rbacv1.PolicyRule{rule(s("get"), s(""), s("pods"))},
			`user "jane" (groups=[]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get"]}; resolution errors: [role.rbac.authorization.k8s.io "gone" not found]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ConfirmNoEscalation(tc.ctx, r, tc.rules)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if err := ConfirmNoEscalation(context.Background(), r, nil); err == nil {
		t.Error("no user: want an error")
	}
}

func TestCompactRules(t *testing.T) {
	in := []rbacv1.PolicyRule{
		rule(s("get"), s(""), s("pods")),
		rule(s("list"), s(""), s("pods")),
		{Verbs: s("get"), APIGroups: s(""), Resources: s("pods"), ResourceNames: s("web")},
		{Verbs: s("delete"), APIGroups: s(""), Resources: s("pods"), ResourceNames: s("web")},
		rule(s("get"), s("", "apps"), s("pods")),
	}
	got := CompactRules(in)
	if len(got) != 3 {
		t.Fatalf("compacted to %d rules: %+v", len(got), got)
	}
	if CompactString(got[0]) != `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}` ||
		CompactString(got[1]) != `{APIGroups:[""], Resources:["pods"], ResourceNames:["web"], Verbs:["get" "delete"]}` ||
		CompactString(got[2]) != `{APIGroups:["" "apps"], Resources:["pods"], Verbs:["get"]}` {
		t.Errorf("compacted %+v", got)
	}
	if in[0].Verbs[0] != "get" || len(in[0].Verbs) != 1 {
		t.Errorf("the input was changed: %+v", in[0])
	}
}
