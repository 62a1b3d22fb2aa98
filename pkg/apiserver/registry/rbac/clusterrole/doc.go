// Package clusterrole is the registry of cluster roles (rbac.authorization.k8s.io/v1
// ClusterRole): policy rules that hold cluster-wide through ClusterRoleBindings, or in one
// namespace through RoleBindings, and may aggregate the rules of other cluster roles by
// label. In the API server's flow (decode → default → validate → admit → store) it owns
// validation and, before the store, the escalation check: a user may write a cluster role
// only with rules they hold cluster-wide, or with `escalate`; an aggregationRule needs every
// permission.
package clusterrole
