package rbac

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-helpers/auth/rbac/validation"
	"k8s.io/klog/v2"
)

// RulesLister lists the rules that apply to a user in a namespace, as a Resolver does.
type RulesLister interface {
	RulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error)
}

// ConfirmNoEscalation returns an error, in upstream's words, unless the request's user
// already holds every one of rules in the request's namespace (cluster-wide for a cluster
// scoped request): no one may grant what they do not have. The missing rules are listed,
// compacted and sorted, one a line.
func ConfirmNoEscalation(ctx context.Context, r RulesLister, rules []rbacv1.PolicyRule) error {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return errors.New("no user on context")
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	held, err := r.RulesFor(ctx, u, namespace)
	if err != nil {
		klog.V(1).InfoS("Non-fatal error resolving the rules of a user", "user", u.GetName(), "err", err)
	}
	covered, missing := validation.Covers(held, rules)
	if covered {
		return nil
	}
	var lines []string
	for _, rule := range CompactRules(missing) {
		line := CompactString(rule)
		if !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.GetName(), u.GetGroups(), strings.Join(lines, "\n"))
	if err != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{err})
	}
	return errors.New(msg)
}

// CompactRules merges the verbs of rules that name one resource of one group (and at most
// one resource name) and nothing else, so that a missing "get, list, watch pods" is one
// line and not three. Other rules are kept as they are.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct{ group, resource, name string }
	var out []rbacv1.PolicyRule
	simple := map[key]int{} // index into out
	for _, rule := range rules {
		k, ok := simpleKey(&rule)
		if !ok {
			out = append(out, rule)
			continue
		}
		if i, seen := simple[k]; seen {
			out[i].Verbs = append(out[i].Verbs, rule.Verbs...)
			continue
		}
		simple[k] = len(out)
		out = append(out, *rule.DeepCopy())
	}
	return out
}

func simpleKey(rule *rbacv1.PolicyRule) (struct{ group, resource, name string }, bool) {
	var k struct{ group, resource, name string }
	if len(rule.ResourceNames) > 1 || len(rule.NonResourceURLs) > 0 || len(rule.APIGroups) != 1 || len(rule.Resources) != 1 {
		return k, false
	}
	only := rbacv1.PolicyRule{APIGroups: rule.APIGroups, Resources: rule.Resources, Verbs: rule.Verbs, ResourceNames: rule.ResourceNames}
	if !reflect.DeepEqual(&only, rule) {
		return k, false
	}
	k.group, k.resource = rule.APIGroups[0], rule.Resources[0]
	if len(rule.ResourceNames) == 1 {
		k.name = "\x00" + rule.ResourceNames[0] // set apart from "no name"
	}
	return k, true
}

// CompactString prints a rule as upstream's messages do:
// {APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}, leaving out empty fields.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"APIGroups", r.APIGroups},
		{"Resources", r.Resources},
		{"NonResourceURLs", r.NonResourceURLs},
		{"ResourceNames", r.ResourceNames},
		{"Verbs", r.Verbs},
	} {
		if len(f.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
