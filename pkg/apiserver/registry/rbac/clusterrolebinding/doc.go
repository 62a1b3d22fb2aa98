// Package clusterrolebinding is the registry of cluster role bindings
// (rbac.authorization.k8s.io/v1 ClusterRoleBinding): they grant a ClusterRole to users,
// groups and service accounts in every namespace and for non-resource URLs. In the API
// server's flow (decode → default → validate → admit → store) it owns defaulting,
// validation (roleRef is immutable; service accounts name their namespace) and, before the
// store, the escalation check: a user may bind a cluster role only if they hold its rules
// cluster-wide or may `bind` it.
package clusterrolebinding
