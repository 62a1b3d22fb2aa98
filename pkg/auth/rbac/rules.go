// Package rbac is the RBAC authorizer: it answers "may this user do this?" from the Roles,
// ClusterRoles and their bindings, as kube-apiserver's --authorization-mode=RBAC does. This
// file is the rule matching that every authorizer over policy rules shares (RBAC itself, the
// node authorizer's fixed node rules).
package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RulesAllow reports whether any of rules allows the request.
func RulesAllow(a authorizer.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

// RuleAllows reports whether rule allows the request: a resource request is matched on
// verb, API group, resource (with its subresource, "pods/status", or "*/status" for a
// subresource of any resource) and name; a non-resource request on verb and path, where a
// trailing "*" matches any path with that prefix.
func RuleAllows(a authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !matches(rule.Verbs, a.GetVerb()) {
		return false
	}
	if !a.IsResourceRequest() {
		return nonResourceURLMatches(rule.NonResourceURLs, a.GetPath())
	}
	return matches(rule.APIGroups, a.GetAPIGroup()) &&
		resourceMatches(rule.Resources, a.GetResource(), a.GetSubresource()) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, a.GetName()))
}

// matches reports whether values holds value or the wildcard.
func matches(values []string, value string) bool {
	for _, v := range values {
		if v == rbacv1.VerbAll || v == value {
			return true
		}
	}
	return false
}

func resourceMatches(ruleResources []string, resource, subresource string) bool {
	combined := resource
	if subresource != "" {
		combined = resource + "/" + subresource
	}
	for _, r := range ruleResources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && r == "*/"+subresource:
			return true
		}
	}
	return false
}

func nonResourceURLMatches(urls []string, path string) bool {
	for _, u := range urls {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")):
			return true
		}
	}
	return false
}
