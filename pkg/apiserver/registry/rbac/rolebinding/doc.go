// Package rolebinding is the registry of role bindings (rbac.authorization.k8s.io/v1
// RoleBinding): they grant a Role or ClusterRole to users, groups and service accounts in
// one namespace. In the API server's flow (decode → default → validate → admit → store) it
// owns defaulting (the API groups of the role reference and of subjects), validation
// (roleRef is immutable) and, before the store, the escalation check: a user may bind a role
// only if they hold its rules in the namespace or may `bind` it.
package rolebinding
