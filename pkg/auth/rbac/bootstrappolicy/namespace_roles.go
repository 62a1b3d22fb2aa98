package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// leaderLocking is what a component needs on the Leases of its namespace to elect a leader.
func leaderLocking() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(v("get", "watch", "list", "create", "update"), g(coordination), "leases"),
		rule(v("get", "watch", "list", "create", "update"), g(coordination), "leasecandidates"),
	}
}

// NamespaceRoles are the Roles of kube-system and kube-public, by namespace.
func NamespaceRoles() map[string][]rbacv1.Role {
	return map[string][]rbacv1.Role{
		metav1.NamespaceSystem: {
			// The ConfigMap that tells extension API servers how to authenticate.
			role(metav1.NamespaceSystem, "extension-apiserver-authentication-reader",
				named(rule(read, g(core), "configmaps"), "extension-apiserver-authentication")),
			// The bootstrap signer inspects the bootstrap-token Secrets.
			role(metav1.NamespaceSystem, controllerPrefix+"bootstrap-signer",
				rule(read, g(core), "secrets")),
			// Deprecated upstream since 1.10, still reconciled.
			role(metav1.NamespaceSystem, controllerPrefix+"cloud-provider",
				rule(v("create", "get", "list", "watch"), g(core), "configmaps")),
			role(metav1.NamespaceSystem, controllerPrefix+"token-cleaner",
				rule(v("get", "list", "watch", "delete"), g(core), "secrets"),
				eventsRule()),
			role(metav1.NamespaceSystem, "system::leader-locking-kube-controller-manager", leaderLocking()...),
			role(metav1.NamespaceSystem, "system::leader-locking-kube-scheduler", leaderLocking()...),
		},
		metav1.NamespacePublic: {
			// The bootstrap signer signs the cluster-info ConfigMap.
			role(metav1.NamespacePublic, controllerPrefix+"bootstrap-signer",
				rule(read, g(core), "configmaps"),
				named(rule(v("update"), g(core), "configmaps"), "cluster-info"),
				eventsRule()),
		},
	}
}

// NamespaceRoleBindings are the RoleBindings of kube-system and kube-public, by namespace.
func NamespaceRoleBindings() map[string][]rbacv1.RoleBinding {
	system := metav1.NamespaceSystem
	return map[string][]rbacv1.RoleBinding{
		system: {
			roleBinding(system, "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
				users(user.KubeControllerManager, user.KubeScheduler)),
			roleBinding(system, "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
				append(users(user.KubeControllerManager), serviceAccounts(system, "kube-controller-manager", "leader-election-controller")...)),
			roleBinding(system, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
				append(users(user.KubeScheduler), serviceAccounts(system, "kube-scheduler")...)),
			roleBinding(system, controllerPrefix+"bootstrap-signer", controllerPrefix+"bootstrap-signer",
				serviceAccounts(system, "bootstrap-signer")),
			roleBinding(system, controllerPrefix+"cloud-provider", controllerPrefix+"cloud-provider",
				serviceAccounts(system, "cloud-provider")),
			roleBinding(system, controllerPrefix+"token-cleaner", controllerPrefix+"token-cleaner",
				serviceAccounts(system, "token-cleaner")),
		},
		metav1.NamespacePublic: {
			roleBinding(metav1.NamespacePublic, controllerPrefix+"bootstrap-signer", controllerPrefix+"bootstrap-signer",
				serviceAccounts(system, "bootstrap-signer")),
		},
	}
}

func role(namespace, name string, rules ...rbacv1.PolicyRule) rbacv1.Role {
	r := rbacv1.Role{ObjectMeta: meta(name), Rules: rules}
	r.Namespace = namespace
	return r
}

// roleBinding binds the Role of its namespace named role.
func roleBinding(namespace, name, role string, subjects []rbacv1.Subject) rbacv1.RoleBinding {
	b := rbacv1.RoleBinding{
		ObjectMeta: meta(name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
	b.Namespace = namespace
	return b
}
