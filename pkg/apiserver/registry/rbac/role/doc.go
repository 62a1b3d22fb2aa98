// Package role is the registry of roles (rbac.authorization.k8s.io/v1 Role): a namespace's
// set of policy rules, which RoleBindings grant. In the API server's flow (decode → default
// → validate → admit → store) it owns validation and, before the store, the escalation check:
// a user may write a role only with rules they hold in its namespace, or with `escalate`.
package role
