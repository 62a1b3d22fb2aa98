// Package bootstrappolicy is the RBAC policy every cluster starts with: the ClusterRoles,
// ClusterRoleBindings and the namespaced Roles and RoleBindings of kube-system and kube-public
// that the API server reconciles at start (pkg/apiserver/rbacbootstrap, the
// "rbac/bootstrap-roles" post-start hook). It is what lets system:masters, every
// authenticated or anonymous client, the nodes, the scheduler, the controller manager and
// its per-controller service accounts do what a real cluster lets them do.
//
// It mirrors kube-apiserver v1.37.2's bootstrap policy with the default feature gates
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) object by object; upstream_test.go proves
// it against upstream's own fixtures in the module cache. Rules and roles that upstream adds
// only behind a feature gate that is off by default are left out, the others are written in
// unconditionally: berth has no feature gates of its own for these APIs.
//
// berth adds no role of its own: its scheduler, controller manager and node agents use
// upstream's identities (system:kube-scheduler, system:kube-controller-manager,
// system:node:<name>), and their leader-election Leases in kube-system are covered by the
// system::leader-locking-* Roles, whatever the Lease's name.
package bootstrappolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Verb sets the roles are written with.
var (
	read       = v("get", "list", "watch")
	write      = v("create", "update", "patch", "delete", "deletecollection")
	readWrite  = v("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
	readUpdate = v("get", "list", "watch", "update", "patch")
)

// API groups the rules name.
const (
	core             = ""
	apps             = "apps"
	authentication   = "authentication.k8s.io"
	authorization    = "authorization.k8s.io"
	autoscaling      = "autoscaling"
	batch            = "batch"
	certificates     = "certificates.k8s.io"
	coordination     = "coordination.k8s.io"
	discovery        = "discovery.k8s.io"
	extensions       = "extensions"
	policy           = "policy"
	rbac             = "rbac.authorization.k8s.io"
	resource         = "resource.k8s.io"
	storage          = "storage.k8s.io"
	networking       = "networking.k8s.io"
	events           = "events.k8s.io"
	admissionReg     = "admissionregistration.k8s.io"
	storageMigration = "storagemigration.k8s.io"
	apiextensions    = "apiextensions.k8s.io"
	nodeGroup        = "node.k8s.io"
	resourceMetrics  = "metrics.k8s.io"
	customMetrics    = "custom.metrics.k8s.io"
	externalMetrics  = "external.metrics.k8s.io"
)

// Labels and names.
const (
	// The roles labelled aggregateToX=true are aggregated into X.
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
	// Every bootstrap object carries bootstrappingKey=bootstrappingRBAC.
	bootstrappingKey  = "kubernetes.io/bootstrapping"
	bootstrappingRBAC = "rbac-defaults"
	// controllerPrefix starts the name of each controller's role.
	controllerPrefix = "system:controller:"
)

// v is a list of verbs.
func v(s ...string) []string { return s }

// g is a list of API groups.
func g(groups ...string) []string { return groups }

// rule allows verbs on resources (with subresources, "pods/status") of the API groups. Its
// lists are sorted, as upstream stores them, so that a reconcile compares equal.
func rule(verbs, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: sorted(verbs), APIGroups: sorted(groups), Resources: sorted(resources)}
}

// named narrows r to the objects of the given names.
func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = sorted(names)
	return r
}

// urls allows verbs on non-resource paths ("/healthz", "/api/*").
func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: sorted(verbs), NonResourceURLs: sorted(paths)}
}

// eventsRule is what every component that records events needs.
func eventsRule() rbacv1.PolicyRule {
	return rule(v("create", "update", "patch"), g(core, events), "events")
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// meta is the metadata of every bootstrap object: the bootstrapping label and the
// autoupdate annotation, which lets the reconcile add what is missing at every start
// (an admin who sets it to "false" keeps their edits).
func meta(name string, labels ...string) metav1.ObjectMeta {
	l := map[string]string{bootstrappingKey: bootstrappingRBAC}
	for _, k := range labels {
		l[k] = "true"
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
	}
}

// Subjects.
func users(names ...string) []rbacv1.Subject {
	return subjects(rbacv1.UserKind, names)
}

func groups(names ...string) []rbacv1.Subject {
	return subjects(rbacv1.GroupKind, names)
}

func subjects(kind string, names []string) []rbacv1.Subject {
	out := make([]rbacv1.Subject, len(names))
	for i, n := range names {
		out[i] = rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: kind, Name: n}
	}
	return out
}

func serviceAccounts(namespace string, names ...string) []rbacv1.Subject {
	out := make([]rbacv1.Subject, len(names))
	for i, n := range names {
		out[i] = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: n}
	}
	return out
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

// Policy is the whole bootstrap policy, what the reconcile at API server start writes.
type Policy struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	// Roles and RoleBindings are by namespace.
	Roles        map[string][]rbacv1.Role
	RoleBindings map[string][]rbacv1.RoleBinding
}

// Default is the policy kube-apiserver reconciles: the cluster roles and the controller
// roles, with their bindings, and the namespaced roles and bindings.
func Default() Policy {
	return Policy{
		ClusterRoles:        append(ClusterRoles(), ControllerRoles()...),
		ClusterRoleBindings: append(ClusterRoleBindings(), ControllerRoleBindings()...),
		Roles:               NamespaceRoles(),
		RoleBindings:        NamespaceRoleBindings(),
	}
}
