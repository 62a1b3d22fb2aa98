package bootstrappolicy

import (
	"slices"

	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllerRoles are the roles of kube-controller-manager's controllers when each runs with
// its own service account (kube-system/<name>, bound to system:controller:<name>).
var controllerRoles = []struct {
	name  string
	rules []rbacv1.PolicyRule
}{
	{"attachdetach-controller", []rbacv1.PolicyRule{
		rule(v("list", "watch"), g(core), "persistentvolumes", "persistentvolumeclaims"),
		rule(read, g(core), "nodes"),
		rule(v("patch", "update"), g(core), "nodes/status"),
		rule(v("list", "watch"), g(core), "pods"),
		eventsRule(),
		rule(v("get", "create", "delete", "list", "watch"), g(storage), "volumeattachments"),
		rule(read, g(storage), "csidrivers"),
		rule(read, g(storage), "csinodes"),
	}},
	// It must be able to give a role any rules, hence escalate.
	{"clusterrole-aggregation-controller", []rbacv1.PolicyRule{
		rule(v("escalate", "get", "list", "watch", "update", "patch"), g(rbac), "clusterroles"),
	}},
	{"cronjob-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update"), g(batch), "cronjobs"),
		rule(v("get", "list", "watch", "create", "update", "delete", "patch"), g(batch), "jobs"),
		rule(v("update"), g(batch), "cronjobs/status"),
		rule(v("update"), g(batch), "cronjobs/finalizers"),
		rule(v("list", "watch", "delete"), g(core), "pods"),
		eventsRule(),
	}},
	{"daemon-set-controller", []rbacv1.PolicyRule{
		rule(read, g(extensions, apps), "daemonsets"),
		rule(v("update"), g(extensions, apps), "daemonsets/status"),
		rule(v("update"), g(extensions, apps), "daemonsets/finalizers"),
		rule(v("list", "watch"), g(core), "nodes"),
		rule(v("list", "watch", "create", "delete", "patch"), g(core), "pods"),
		rule(v("create"), g(core), "pods/binding"),
		rule(v("get", "list", "watch", "create", "delete", "update", "patch"), g(apps), "controllerrevisions"),
		eventsRule(),
	}},
	{"deployment-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update"), g(extensions, apps), "deployments"),
		rule(v("update"), g(extensions, apps), "deployments/status"),
		rule(v("update"), g(extensions, apps), "deployments/finalizers"),
		rule(v("get", "list", "watch", "create", "update", "patch", "delete"), g(apps, extensions), "replicasets"),
		rule(v("get", "list", "watch", "update"), g(core), "pods"),
		eventsRule(),
	}},
	{"disruption-controller", []rbacv1.PolicyRule{
		rule(read, g(extensions, apps), "deployments"),
		rule(read, g(apps, extensions), "replicasets"),
		rule(read, g(core), "replicationcontrollers"),
		rule(read, g(policy), "poddisruptionbudgets"),
		rule(read, g(apps), "statefulsets"),
		rule(v("update"), g(policy), "poddisruptionbudgets/status"),
		rule(v("patch", "update"), g(core), "pods/status"),
		rule(v("get"), g("*"), "*/scale"),
		eventsRule(),
	}},
	{"endpoint-controller", []rbacv1.PolicyRule{
		rule(read, g(core), "services", "pods"),
		rule(v("get", "list", "watch", "create", "update", "delete"), g(core), "endpoints"),
		rule(v("create"), g(core), "endpoints/restricted"),
		eventsRule(),
	}},
	// The finalizers rules let it set blockOwnerDeletion in the slices' owner references.
	{"endpointslice-controller", []rbacv1.PolicyRule{
		rule(read, g(core), "services", "pods", "nodes"),
		rule(v("update"), g(core), "services/finalizers"),
		rule(v("get", "list", "watch", "create", "update", "delete"), g(discovery), "endpointslices"),
		eventsRule(),
	}},
	{"endpointslicemirroring-controller", []rbacv1.PolicyRule{
		rule(read, g(core), "services", "endpoints"),
		rule(v("update"), g(core), "services/finalizers"),
		rule(v("update"), g(core), "endpoints/finalizers"),
		rule(v("get", "list", "watch", "create", "update", "delete"), g(discovery), "endpointslices"),
		eventsRule(),
	}},
	{"expand-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update", "patch"), g(core), "persistentvolumes"),
		rule(v("update", "patch"), g(core), "persistentvolumeclaims/status"),
		rule(read, g(core), "persistentvolumeclaims"),
		eventsRule(),
	}},
	{"ephemeral-volume-controller", []rbacv1.PolicyRule{
		rule(read, g(core), "pods"),
		rule(v("update"), g(core), "pods/finalizers"),
		rule(v("get", "list", "watch", "create"), g(core), "persistentvolumeclaims"),
		eventsRule(),
	}},
	{"resource-claim-controller", []rbacv1.PolicyRule{
		rule(read, g(core), "pods"),
		rule(v("update"), g(core), "pods/finalizers"),
		rule(v("get", "list", "watch", "create", "delete"), g(resource), "resourceclaims"),
		rule(v("update", "patch"), g(resource), "resourceclaims", "resourceclaims/status"),
		rule(v("update", "patch"), g(core), "pods/status"),
		eventsRule(),
		rule(v("update", "patch"), g(resource), "resourceclaims/binding"),
	}},
	// Evicts pods (deletes them) from tainted devices.
	{"device-taint-eviction-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "delete"), g(core), "pods"),
		rule(v("update", "patch"), g(core), "pods/status"),
		rule(read, g(resource), "resourceclaims"),
		rule(read, g(resource), "resourceslices"),
		rule(read, g(resource), "deviceclasses"),
		eventsRule(),
		rule(v("update", "patch"), g(resource), "devicetaintrules/status"),
		rule(read, g(resource), "devicetaintrules"),
	}},
	{"generic-garbage-collector", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "patch", "update", "delete"), g("*"), "*"),
		eventsRule(),
	}},
	{"horizontal-pod-autoscaler", []rbacv1.PolicyRule{
		rule(read, g(autoscaling), "horizontalpodautoscalers"),
		rule(v("update"), g(autoscaling), "horizontalpodautoscalers/status"),
		rule(v("get", "update"), g("*"), "*/scale"),
		rule(v("list", "watch"), g(core), "pods"),
		rule(v("list", "watch"), g(resourceMetrics), "pods"),
		rule(read, g(customMetrics), "*"),
		rule(read, g(externalMetrics), "*"),
		eventsRule(),
	}},
	{"job-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update", "patch"), g(batch), "jobs"),
		rule(v("update"), g(batch), "jobs/status"),
		rule(v("update"), g(batch), "jobs/finalizers"),
		rule(v("list", "watch", "create", "delete", "patch"), g(core), "pods"),
		eventsRule(),
	}},
	{"namespace-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "delete"), g(core), "namespaces"),
		rule(v("update"), g(core), "namespaces/finalize", "namespaces/status"),
		rule(v("get", "list", "watch", "delete", "deletecollection"), g("*"), "*"),
	}},
	{"node-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update", "delete", "patch"), g(core), "nodes"),
		rule(v("patch", "update"), g(core), "nodes/status"),
		// Marking and deleting the pods of lost nodes.
		rule(v("patch", "update"), g(core), "pods/status"),
		rule(v("list", "watch", "get", "delete"), g(core), "pods"),
		rule(read, g(coordination), "leases"),
		eventsRule(),
	}},
	{"persistent-volume-binder", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update", "create", "delete"), g(core), "persistentvolumes"),
		rule(v("update"), g(core), "persistentvolumes/status"),
		rule(v("get", "list", "watch", "update"), g(core), "persistentvolumeclaims"),
		rule(v("update"), g(core), "persistentvolumeclaims/status"),
		rule(v("list", "watch", "get", "create", "delete"), g(core), "pods"),
		rule(read, g(storage), "storageclasses"),
		rule(v("list", "watch"), g(core), "nodes"),
		eventsRule(),
		// The recycler watches its pod's events.
		rule(v("watch"), g(core), "events"),
	}},
	{"pod-garbage-collector", []rbacv1.PolicyRule{
		rule(v("list", "watch", "delete"), g(core), "pods"),
		rule(read, g(core), "nodes"),
		rule(v("patch"), g(core), "pods/status"),
	}},
	{"replicaset-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update"), g(apps, extensions), "replicasets"),
		rule(v("update"), g(apps, extensions), "replicasets/status"),
		rule(v("update"), g(apps, extensions), "replicasets/finalizers"),
		rule(v("list", "watch", "patch", "create", "delete"), g(core), "pods"),
		eventsRule(),
	}},
	{"replication-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update"), g(core), "replicationcontrollers"),
		rule(v("update"), g(core), "replicationcontrollers/status"),
		rule(v("update"), g(core), "replicationcontrollers/finalizers"),
		rule(v("list", "watch", "patch", "create", "delete"), g(core), "pods"),
		eventsRule(),
	}},
	// Quota counts anything, so it reads everything.
	{"resourcequota-controller", []rbacv1.PolicyRule{
		rule(v("list", "watch"), g("*"), "*"),
		rule(v("update"), g(core), "resourcequotas/status"),
		eventsRule(),
	}},
	{"route-controller", []rbacv1.PolicyRule{
		rule(v("list", "watch"), g(core), "nodes"),
		rule(v("patch"), g(core), "nodes/status"),
		eventsRule(),
	}},
	{"service-account-controller", []rbacv1.PolicyRule{
		rule(v("create"), g(core), "serviceaccounts"),
		eventsRule(),
	}},
	{"service-controller", []rbacv1.PolicyRule{
		rule(read, g(core), "services"),
		rule(v("patch", "update"), g(core), "services/status"),
		rule(v("list", "watch"), g(core), "nodes"),
		eventsRule(),
	}},
	{"service-cidrs-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "patch", "update"), g(networking), "servicecidrs"),
		rule(v("patch", "update"), g(networking), "servicecidrs/finalizers"),
		rule(v("patch", "update"), g(networking), "servicecidrs/status"),
		rule(read, g(networking), "ipaddresses"),
		eventsRule(),
	}},
	{"statefulset-controller", []rbacv1.PolicyRule{
		rule(v("list", "watch"), g(core), "pods"),
		rule(read, g(apps), "statefulsets"),
		rule(v("update"), g(apps), "statefulsets/status"),
		rule(v("update"), g(apps), "statefulsets/finalizers"),
		rule(v("get", "create", "delete", "update", "patch"), g(core), "pods"),
		rule(v("get", "create", "delete", "update", "patch", "list", "watch"), g(apps), "controllerrevisions"),
		rule(v("get", "create", "list", "watch"), g(core), "persistentvolumeclaims"),
		rule(v("update", "delete"), g(core), "persistentvolumeclaims"),
		rule(v("update"), g(core), "pods/finalizers"),
		eventsRule(),
	}},
	{"ttl-controller", []rbacv1.PolicyRule{
		rule(v("update", "patch", "list", "watch"), g(core), "nodes"),
		eventsRule(),
	}},
	{"certificate-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "delete"), g(certificates), "certificatesigningrequests"),
		rule(v("update"), g(certificates), "certificatesigningrequests/status", "certificatesigningrequests/approval"),
		named(rule(v("approve"), g(certificates), "signers"), certificatesv1beta1.KubeAPIServerClientKubeletSignerName),
		named(rule(v("sign"), g(certificates), "signers"),
			certificatesv1beta1.LegacyUnknownSignerName,
			certificatesv1beta1.KubeAPIServerClientSignerName,
			certificatesv1beta1.KubeAPIServerClientKubeletSignerName,
			certificatesv1beta1.KubeletServingSignerName),
		rule(v("create"), g(authorization), "subjectaccessreviews"),
		eventsRule(),
	}},
	{"podcertificaterequestcleaner", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "delete"), g(certificates), "podcertificaterequests"),
	}},
	{"pvc-protection-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update"), g(core), "persistentvolumeclaims"),
		rule(v("update"), g(core), "persistentvolumeclaims/status"),
		rule(read, g(core), "pods"),
		eventsRule(),
	}},
	{"pv-protection-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "update"), g(core), "persistentvolumes"),
		eventsRule(),
	}},
	{"volumeattributesclass-protection-controller", []rbacv1.PolicyRule{
		rule(read, g(core), "persistentvolumeclaims"),
		rule(read, g(core), "persistentvolumes"),
		rule(v("get", "list", "watch", "update"), g(storage), "volumeattributesclasses"),
		eventsRule(),
	}},
	{"ttl-after-finished-controller", []rbacv1.PolicyRule{
		rule(v("get", "list", "watch", "delete"), g(batch), "jobs"),
		eventsRule(),
	}},
	{"root-ca-cert-publisher", []rbacv1.PolicyRule{
		rule(v("create", "update"), g(core), "configmaps"),
		eventsRule(),
	}},
	{"kube-apiserver-serving-clustertrustbundle-publisher", []rbacv1.PolicyRule{
		named(rule(v("attest"), g(certificates), "signers"), "kubernetes.io/kube-apiserver-serving"),
		rule(v("create", "update", "delete", "list", "watch"), g(certificates), "clustertrustbundles"),
		eventsRule(),
	}},
	{"validatingadmissionpolicy-status-controller", []rbacv1.PolicyRule{
		rule(read, g(admissionReg), "validatingadmissionpolicies"),
		rule(v("get", "patch", "update"), g(admissionReg), "validatingadmissionpolicies/status"),
		eventsRule(),
	}},
	{"legacy-service-account-token-cleaner", []rbacv1.PolicyRule{
		named(rule(v("get"), g(core), "configmaps"), "kube-apiserver-legacy-service-account-token-tracking"),
		rule(v("patch", "delete"), g(core), "secrets"),
	}},
	// It lists any resource for its current resourceVersion and patches it to migrate it.
	{"storage-version-migrator-controller", []rbacv1.PolicyRule{
		rule(v("list", "patch"), g("*"), "*"),
		rule(v("get"), g(apiextensions), "customresourcedefinitions"),
		rule(v("patch"), g(apiextensions), "customresourcedefinitions/status"),
		rule(v("update"), g(storageMigration), "storageversionmigrations/status"),
	}},
	{"selinux-warning-controller", []rbacv1.PolicyRule{
		eventsRule(),
		rule(read, g(core), "persistentvolumes"),
		rule(read, g(core), "persistentvolumeclaims"),
		rule(read, g(core), "pods"),
		rule(read, g(storage), "csidrivers"),
	}},
}

// ControllerRoles are the system:controller:<name> ClusterRoles.
func ControllerRoles() []rbacv1.ClusterRole {
	out := make([]rbacv1.ClusterRole, len(controllerRoles))
	for i, c := range controllerRoles {
		out[i] = clusterRole(controllerPrefix+c.name, nil, slices.Clone(c.rules)...) // callers may edit theirs
	}
	return out
}

// ControllerRoleBindings bind each controller role to the controller's service account in
// kube-system.
func ControllerRoleBindings() []rbacv1.ClusterRoleBinding {
	out := make([]rbacv1.ClusterRoleBinding, len(controllerRoles))
	for i, c := range controllerRoles {
		out[i] = clusterBinding(controllerPrefix+c.name, serviceAccounts(metav1.NamespaceSystem, c.name))
	}
	return out
}
