package bootstrappolicy

import (
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// NodeRoleName is the ClusterRole of the node agents' rules. Its binding has no subjects:
// nodes get these rules from the node authorizer, which narrows them to the node's own
// objects.
const NodeRoleName = "system:node"

// NodeRules are what a node agent may do at all (system:node); the node authorizer allows
// them only on the objects the node's pods reference, and NodeRestriction narrows the writes.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Non-mutating checks of API access (the node API's webhook authn/authz).
		rule(v("create"), g(authentication), "tokenreviews"),
		rule(v("create"), g(authorization), "subjectaccessreviews", "localsubjectaccessreviews"),
		// The Services informer, for the pods' service environment variables.
		rule(read, g(core), "services"),
		// Registering its Node and reporting its status.
		rule(v("create", "get", "list", "watch"), g(core), "nodes"),
		rule(v("update", "patch"), g(core), "nodes/status"),
		rule(v("update", "patch"), g(core), "nodes"),
		eventsRule(),
		// Its pods: reading them, mirror pods, status, evictions.
		rule(read, g(core), "pods"),
		rule(v("create", "delete"), g(core), "pods"),
		rule(v("update", "patch"), g(core), "pods/status"),
		rule(v("create"), g(core), "pods/eviction"),
		// What its pods reference: pull secrets, secret and configmap volumes and envs, PVs.
		rule(read, g(core), "secrets", "configmaps"),
		rule(v("get"), g(core), "persistentvolumeclaims", "persistentvolumes"),
		rule(v("get"), g(core), "endpoints"),
		// Rotating its own client certificate.
		rule(v("create", "get", "list", "watch"), g(certificates), "certificatesigningrequests"),
		// Its node Lease.
		rule(v("get", "create", "update", "patch", "delete"), g(coordination), "leases"),
		rule(v("get"), g(storage), "volumeattachments"),
		// Service-account tokens of its pods (TokenRequest).
		rule(v("create"), g(core), "serviceaccounts/token"),
		rule(v("get", "update", "patch"), g(core), "persistentvolumeclaims/status"),
		rule(read, g(storage), "csidrivers"),
		rule(v("get", "create", "update", "patch", "delete"), g(storage), "csinodes"),
		rule(read, g(nodeGroup), "runtimeclasses"),
		rule(v("get"), g(resource), "resourceclaims"),
		rule(v("deletecollection"), g(resource), "resourceslices"),
		rule(read, g(certificates), "clustertrustbundles"),
		// Service-account tokens for image credential providers.
		rule(v("get"), g(core), "serviceaccounts"),
		rule(v("get", "list", "watch", "create"), g(certificates), "podcertificaterequests"),
	}
}

// ClusterRoles are the cluster-wide roles: the superuser, the user-facing aggregated roles
// (admin, edit, view and their aggregate-to-* parts), and the system: roles of the
// components and of every authenticated or anonymous client.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule(v("*"), g("*"), "*"),
			urls(v("*"), "*")),
		clusterRole("system:discovery", nil,
			urls(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")),
		clusterRole("system:monitoring", nil,
			urls(v("get"), "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
				"/livez/*", "/readyz/*", "/healthz/*", "/flagz", "/statusz"),
			rule(v("get"), g(core), "nodes/metrics")),
		clusterRole("system:basic-user", nil,
			rule(v("create"), g(authorization), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule(v("create"), g(authentication), "selfsubjectreviews")),
		clusterRole("system:public-info-viewer", nil,
			urls(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/")),

		// The user-facing roles are filled by the clusterrole-aggregation controller from the
		// roles labelled for them; admin ⊇ edit ⊇ view, since edit is labelled for admin and
		// view for edit.
		aggregatedRole("admin", aggregateToAdmin),
		aggregatedRole("edit", aggregateToEdit, aggregateToAdmin),
		aggregatedRole("view", aggregateToView, aggregateToEdit),
		clusterRole("system:aggregate-to-admin", []string{aggregateToAdmin},
			rule(v("create"), g(authorization), "localsubjectaccessreviews"),
			rule(readWrite, g(rbac), "roles", "rolebindings")),
		clusterRole("system:aggregate-to-edit", []string{aggregateToEdit}, editRules()...),
		clusterRole("system:aggregate-to-view", []string{aggregateToView}, viewRules()...),

		clusterRole("system:heapster", nil,
			rule(read, g(core), "events", "pods", "nodes", "namespaces"),
			rule(read, g(extensions), "deployments")),
		clusterRole(NodeRoleName, nil, NodeRules()...),
		clusterRole("system:node-problem-detector", nil,
			rule(v("get"), g(core), "nodes"),
			rule(v("patch"), g(core), "nodes/status"),
			eventsRule()),
		clusterRole("system:node-bootstrapper", nil,
			rule(v("create", "get", "list", "watch"), g(certificates), "certificatesigningrequests")),
		clusterRole("system:auth-delegator", nil,
			rule(v("create"), g(authentication), "tokenreviews"),
			rule(v("create"), g(authorization), "subjectaccessreviews")),
		clusterRole("system:kube-aggregator", nil,
			rule(read, g(core), "services", "endpoints")),
		clusterRole("system:kube-controller-manager", nil,
			eventsRule(),
			// Leader election.
			rule(v("create"), g(coordination), "leases"),
			named(rule(v("get", "update"), g(coordination), "leases"), "kube-controller-manager"),
			// What it needs to make the per-controller service accounts and their credentials.
			rule(v("create"), g(core), "secrets", "serviceaccounts"),
			rule(v("delete"), g(core), "secrets"),
			rule(v("get"), g(core), "namespaces", "secrets", "serviceaccounts", "configmaps"),
			rule(v("update"), g(core), "secrets", "serviceaccounts"),
			rule(v("create"), g(authentication), "tokenreviews"),
			rule(v("create"), g(authorization), "subjectaccessreviews"),
			// Every shared informer.
			rule(v("list", "watch"), g("*"), "*"),
			rule(v("create"), g(core), "serviceaccounts/token")),
		clusterRole("system:kube-dns", nil,
			rule(v("list", "watch"), g(core), "endpoints", "services")),
		clusterRole("system:persistent-volume-provisioner", nil,
			rule(v("get", "list", "watch", "create", "delete"), g(core), "persistentvolumes"),
			rule(v("get", "list", "watch", "update"), g(core), "persistentvolumeclaims"),
			rule(read, g(storage), "storageclasses"),
			rule(v("watch"), g(core), "events"),
			eventsRule()),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient", nil,
			rule(v("create"), g(certificates), "certificatesigningrequests/nodeclient")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", nil,
			rule(v("create"), g(certificates), "certificatesigningrequests/selfnodeclient")),
		clusterRole("system:volume-scheduler", nil,
			rule(readUpdate, g(core), "persistentvolumes"),
			rule(read, g(storage), "storageclasses"),
			rule(readUpdate, g(core), "persistentvolumeclaims")),
		approverRole("system:certificates.k8s.io:legacy-unknown-approver", certificatesv1beta1.LegacyUnknownSignerName),
		approverRole("system:certificates.k8s.io:kubelet-serving-approver", certificatesv1beta1.KubeletServingSignerName),
		approverRole("system:certificates.k8s.io:kube-apiserver-client-approver", certificatesv1beta1.KubeAPIServerClientSignerName),
		approverRole("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", certificatesv1beta1.KubeAPIServerClientKubeletSignerName),
		// The trailing slashes serve clients generated from an older OpenAPI document.
		clusterRole("system:service-account-issuer-discovery", nil,
			urls(v("get"), "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/")),
		clusterRole("system:kubelet-api-admin", nil,
			rule(read, g(core), "nodes"),
			rule(v("proxy"), g(core), "nodes"),
			rule(v("*"), g(core), "nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"),
			rule(v("*"), g(core), "nodes/pods", "nodes/healthz", "nodes/configz")),
		clusterRole("system:node-proxier", nil,
			rule(v("list", "watch"), g(core), "services", "endpoints"),
			rule(read, g(core), "nodes"),
			eventsRule(),
			rule(v("list", "watch"), g(networking), "servicecidrs"),
			rule(v("list", "watch"), g(discovery), "endpointslices")),
		clusterRole("system:kube-scheduler", nil, schedulerRules()...),
		clusterRole("system:cluster-trust-bundle-discovery", nil,
			rule(read, g(certificates), "clustertrustbundles")),
	}
	return roles
}

func clusterRole(name string, labels []string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta(name, labels...), Rules: rules}
}

// aggregatedRole has no rules of its own: the aggregation controller writes the union of the
// roles labelled from=true.
func aggregatedRole(name, from string, labels ...string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: meta(name, labels...),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{from: "true"}},
		}},
	}
}

// approverRole lets the CSR approver approve requests for one signer.
func approverRole(name, signer string) rbacv1.ClusterRole {
	return clusterRole(name, nil, named(rule(v("approve"), g(certificates), "signers"), signer))
}

// viewRules read the non-escalating namespaced resources (no secrets, no pods/exec).
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, g(core), "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		rule(read, g(core), "limitranges", "resourcequotas", "bindings", "pods/status", "resourcequotas/status",
			"namespaces/status", "replicationcontrollers/status", "pods/log"),
		// Reading namespaces in a namespace is reading that one: a hint of where one has access.
		rule(read, g(core), "namespaces"),
		rule(read, g(core, events), "events"),
		rule(read, g(discovery), "endpointslices"),
		rule(read, g(apps), "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale"),
		rule(read, g(autoscaling), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(read, g(batch), "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
		rule(read, g(extensions), "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies"),
		rule(read, g(policy), "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(read, g(networking), "networkpolicies", "ingresses", "ingresses/status"),
		rule(read, g(resource), "resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// editRules write the user-level namespaced resources, but not /status, quotas or limits,
// which are the system's.
func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, g(core), "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
		rule(v("impersonate"), g(core), "serviceaccounts"),
		rule(write, g(core), "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		rule(v("create"), g(core), "pods/eviction"),
		rule(write, g(core), "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets"),
		rule(v("create"), g(core), "serviceaccounts/token"),
		rule(write, g(core, events), "events"),
		rule(write, g(apps), "statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale",
			"deployments/rollback", "replicasets", "replicasets/scale"),
		rule(write, g(autoscaling), "horizontalpodautoscalers"),
		rule(write, g(batch), "jobs", "cronjobs"),
		rule(write, g(extensions), "daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
		rule(write, g(policy), "poddisruptionbudgets"),
		rule(write, g(networking), "networkpolicies", "ingresses"),
		rule(readWrite, g(coordination), "leases"),
		rule(write, g(resource), "resourceclaims", "resourceclaimtemplates"),
	}
}

func schedulerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		eventsRule(),
		// Leader election.
		rule(v("create"), g(coordination), "leases"),
		named(rule(v("get", "update", "list", "watch"), g(coordination), "leases"), "kube-scheduler"),
		rule(readWrite, g(coordination), "leasecandidates"),
		// Pods and nodes: the queue, the cache, binding, preemption.
		rule(read, g(core), "nodes"),
		rule(v("get", "list", "watch", "delete"), g(core), "pods"),
		rule(v("create"), g(core), "pods/binding", "bindings"),
		rule(v("patch", "update"), g(core), "pods/status"),
		// What selects pods (spreading).
		rule(read, g(core), "services", "replicationcontrollers"),
		rule(read, g(apps, extensions), "replicasets"),
		rule(read, g(apps), "statefulsets"),
		// What pods use or what applies to them.
		rule(read, g(policy), "poddisruptionbudgets"),
		rule(read, g(core), "persistentvolumeclaims", "persistentvolumes"),
		rule(v("create"), g(authentication), "tokenreviews"),
		rule(v("create"), g(authorization), "subjectaccessreviews"),
		// Volume limits.
		rule(read, g(storage), "csinodes"),
		rule(read, g(storage), "volumeattachments"),
		// namespaceSelector in pod affinity.
		rule(read, g(core), "namespaces"),
		rule(read, g(storage), "csidrivers"),
		rule(read, g(storage), "csistoragecapacities"),
		// Dynamic resource allocation.
		rule(read, g(resource), "deviceclasses"),
		rule(readUpdate, g(resource), "resourceclaims"),
		rule(readUpdate, g(resource), "resourceclaims/status"),
		rule(v("update"), g(core), "pods/finalizers"),
		rule(read, g(resource), "resourceslices"),
		rule(v("create", "delete"), g(resource), "resourceclaims"),
		rule(read, g(resource), "devicetaintrules"),
		rule(v("update", "patch"), g(resource), "resourceclaims/binding"),
	}
}

// ClusterRoleBindings bind the cluster roles to the groups and users that need them.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", groups(user.SystemPrivilegedGroup)),
		clusterBinding("system:monitoring", groups(user.MonitoringGroup)),
		clusterBinding("system:discovery", groups(user.AllAuthenticated)),
		clusterBinding("system:basic-user", groups(user.AllAuthenticated)),
		clusterBinding("system:public-info-viewer", groups(user.AllAuthenticated, user.AllUnauthenticated)),
		clusterBinding("system:node-proxier", users(user.KubeProxy)),
		clusterBinding("system:kube-controller-manager", users(user.KubeControllerManager)),
		clusterBinding("system:kube-dns", serviceAccounts("kube-system", "kube-dns")),
		clusterBinding("system:kube-scheduler", users(user.KubeScheduler)),
		clusterBinding("system:volume-scheduler", users(user.KubeScheduler)),
		// Left without subjects since the node authorizer took over (1.7), so that a
		// tightening reconcile can drop the old system:nodes subject.
		clusterBinding(NodeRoleName, nil),
		// Every workload may read the OIDC discovery document of the tokens it holds.
		clusterBinding("system:service-account-issuer-discovery", groups(serviceaccount.AllServiceAccountsGroup)),
		clusterBinding("system:cluster-trust-bundle-discovery", groups(serviceaccount.AllServiceAccountsGroup)),
	}
}

// clusterBinding binds the ClusterRole of the same name.
func clusterBinding(role string, subjects []rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: meta(role), RoleRef: clusterRoleRef(role), Subjects: subjects}
}
