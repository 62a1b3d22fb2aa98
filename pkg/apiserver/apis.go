package apiserver

import (
	"crypto/tls"
	"fmt"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/controllerrevision"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/daemonset"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/deployment"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/replicaset"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/statefulset"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/authentication/selfsubjectreview"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/authentication/tokenreview"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/authorization/localsubjectaccessreview"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/authorization/selfsubjectaccessreview"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/authorization/selfsubjectrulesreview"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/authorization/subjectaccessreview"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/batch/cronjob"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/batch/job"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/coordination/lease"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/configmap"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/endpoints"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/event"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/limitrange"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/node"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolume"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolumeclaim"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/podtemplate"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/replicationcontroller"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/resourcequota"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/secret"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/service"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/serviceaccount"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/discovery/endpointslice"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/networking/ipaddress"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/networking/servicecidr"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/node/runtimeclass"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/policy/poddisruptionbudget"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/clusterrole"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/clusterrolebinding"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/escalation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/role"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/rolebinding"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/scheduling/priorityclass"
	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
)

// installAPIs builds every resource's storage and serves it: core/v1 under /api, the other
// groups under /apis. authz answers access reviews and makes the escalation checks of the
// rbac registries; rules lists a user's rules for rules reviews.
func installAPIs(c Config, self endpoint, gs *genericapiserver.GenericAPIServer, getter generic.RESTOptionsGetter, kubelet *pod.KubeletConnection, authz authorizer.Authorizer, rules authorizer.RuleResolver, tokens *serviceAccountTokens) error {
	// Services allocate IPs as IPAddress objects inside ServiceCIDRs: those stores come first.
	ipAddresses, err := ipaddress.NewREST(getter)
	if err != nil {
		return err
	}
	serviceCIDRs, err := servicecidr.NewREST(getter)
	if err != nil {
		return err
	}
	svcNet, err := newServiceNetwork(c, getter, ipAddresses.Store, serviceCIDRs.ServiceCIDR.Store)
	if err != nil {
		return err
	}
	slices, err := endpointslice.NewREST(getter)
	if err != nil {
		svcNet.close()
		return err
	}
	// pods/eviction spends PodDisruptionBudgets through their store: it comes before the pods.
	pdbs, err := poddisruptionbudget.NewStorage(getter)
	if err != nil {
		svcNet.close()
		return err
	}
	core, err := coreStorage(getter, kubelet, tokens, svcNet, slices.Store, pdbs.Budgets())
	if err != nil {
		svcNet.close()
		return err
	}
	services := core["services"].(*registry.Resource).Store
	installServiceHooks(gs, self, svcNet, services, ipAddresses.Store)
	core["componentstatuses"] = newComponentStatuses(c)
	legacy := newGroup(corev1.SchemeGroupVersion.Group)
	legacy.VersionedResourcesStorageMap["v1"] = core
	if err := gs.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &legacy); err != nil {
		return fmt.Errorf("installing core/v1: %w", err)
	}
	dropStaticOpenAPISpec(&legacy)

	leases, err := lease.NewREST(getter)
	if err != nil {
		return err
	}
	events, err := event.NewREST(getter, eventsv1.Resource("events"))
	if err != nil {
		return err
	}
	priorityClasses, err := priorityclass.NewREST(getter)
	if err != nil {
		return err
	}
	runtimeClasses, err := runtimeclass.NewREST(getter)
	if err != nil {
		return err
	}
	rbacStorage, err := rbacStorage(getter, authz)
	if err != nil {
		return err
	}
	apps, err := appsStorage(getter)
	if err != nil {
		return err
	}
	batchStorage, err := batchStorage(getter)
	if err != nil {
		return err
	}
	certificates, err := certificatesStorage(getter, authz)
	if err != nil {
		return err
	}
	admissionRegistration, err := admissionregistrationStorage(getter)
	if err != nil {
		return err
	}
	networking, err := networkingStorage(getter, ipAddresses, serviceCIDRs)
	if err != nil {
		return err
	}
	storageGroup, err := storageStorage(getter)
	if err != nil {
		return err
	}
	flowcontrol, err := flowcontrolStorage(getter)
	if err != nil {
		return err
	}
	autoscalingV2, autoscalingV1, err := autoscalingStorage(getter)
	if err != nil {
		return err
	}
	groups := []struct {
		group, version string
		storage        map[string]rest.Storage
	}{
		{authenticationv1.GroupName, "v1", map[string]rest.Storage{
			"tokenreviews":       tokenreview.NewREST(tokens.requestAuthenticator(), tokens.audiences),
			"selfsubjectreviews": selfsubjectreview.NewREST(),
		}},
		{authorizationv1.GroupName, "v1", map[string]rest.Storage{
			"subjectaccessreviews":      subjectaccessreview.NewREST(authz),
			"selfsubjectaccessreviews":  selfsubjectaccessreview.NewREST(authz),
			"localsubjectaccessreviews": localsubjectaccessreview.NewREST(authz),
			"selfsubjectrulesreviews":   selfsubjectrulesreview.NewREST(rules),
		}},
		{coordinationv1.GroupName, "v1", map[string]rest.Storage{"leases": leases}},
		{eventsv1.GroupName, "v1", map[string]rest.Storage{"events": events}},
		{schedulingv1.GroupName, "v1", map[string]rest.Storage{"priorityclasses": priorityClasses}},
		{rbacv1.GroupName, "v1", rbacStorage},
		{appsv1.GroupName, "v1", apps},
		{discoveryv1.GroupName, "v1", map[string]rest.Storage{"endpointslices": slices}},
		{nodev1.GroupName, "v1", map[string]rest.Storage{"runtimeclasses": runtimeClasses}},
		{networkingv1.GroupName, "v1", networking},
		{batchv1.GroupName, "v1", batchStorage},
		{certificatesv1.GroupName, "v1", certificates},
		{policyv1.GroupName, "v1", map[string]rest.Storage{
			"poddisruptionbudgets":        pdbs.PodDisruptionBudget,
			"poddisruptionbudgets/status": pdbs.Status,
		}},
		{admissionregistrationv1.GroupName, "v1", admissionRegistration},
		{storagev1.GroupName, "v1", storageGroup},
		{flowcontrolv1.GroupName, "v1", flowcontrol},
		{autoscalingv2.GroupName, "v2", autoscalingV2},
		{autoscalingv2.GroupName, "v1", autoscalingV1},
	}
	more, err := resourceGroups(getter, core["namespaces"].(rest.Getter), authz)
	if err != nil {
		return err
	}
	groups = append(groups, more...)
	// A group served at several versions (autoscaling) is one APIGroupInfo.
	infos := make([]*genericapiserver.APIGroupInfo, 0, len(groups))
	byGroup := map[string]*genericapiserver.APIGroupInfo{}
	for _, g := range groups {
		info, ok := byGroup[g.group]
		if !ok {
			i := newGroup(g.group)
			info = &i
			byGroup[g.group] = info
			infos = append(infos, info)
		}
		info.VersionedResourcesStorageMap[g.version] = g.storage
	}
	if err := gs.InstallAPIGroups(infos...); err != nil {
		return fmt.Errorf("installing API groups: %w", err)
	}
	dropStaticOpenAPISpec(infos...)
	return nil
}

// dropStaticOpenAPISpec lets the installed groups' OpenAPI models go. The generic server
// builds them to install the groups (the server-side apply models are made from them, and
// keep none of them), then keeps every APIGroupInfo for its storage's destroy function at
// shutdown, and with it the models and the definitions they share: 3 MB of live heap that
// nothing reads again (/openapi/v2 and v3 build their own, installLazyOpenAPI).
func dropStaticOpenAPISpec(infos ...*genericapiserver.APIGroupInfo) {
	for _, info := range infos {
		info.StaticOpenAPISpec = nil
	}
}

// proxyTransport carries pods/proxy and services/proxy to pods, as kube-apiserver's: pods'
// serving certificates are not checked (they have no names the server could check).
var proxyTransport = utilnet.SetTransportDefaults(&http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	Proxy:           nil,
})

func newGroup(group string) genericapiserver.APIGroupInfo {
	return genericapiserver.NewDefaultAPIGroupInfo(group, scheme.Scheme, scheme.ParameterCodec, scheme.Codecs)
}

// rbacStorage builds the four rbac stores, then their endpoints, whose escalation checks
// read all four stores.
func rbacStorage(getter generic.RESTOptionsGetter, authz authorizer.Authorizer) (map[string]rest.Storage, error) {
	roles, err := role.NewStore(getter)
	if err != nil {
		return nil, err
	}
	roleBindings, err := rolebinding.NewStore(getter)
	if err != nil {
		return nil, err
	}
	clusterRoles, err := clusterrole.NewStore(getter)
	if err != nil {
		return nil, err
	}
	clusterRoleBindings, err := clusterrolebinding.NewStore(getter)
	if err != nil {
		return nil, err
	}
	guard := escalation.Guard{
		Authorizer: authz,
		Resolver:   escalation.StoreResolver(roles, roleBindings, clusterRoles, clusterRoleBindings),
	}
	return map[string]rest.Storage{
		"roles":               role.NewREST(roles, guard),
		"rolebindings":        rolebinding.NewREST(roleBindings, guard),
		"clusterroles":        clusterrole.NewREST(clusterRoles, guard),
		"clusterrolebindings": clusterrolebinding.NewREST(clusterRoleBindings, guard),
	}, nil
}

// appsStorage builds the apps/v1 workloads' stores and their subresources.
func appsStorage(getter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	deployments, err := deployment.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	replicaSets, err := replicaset.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	statefulSets, err := statefulset.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	daemonSets, err := daemonset.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	revisions, err := controllerrevision.NewREST(getter)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{
		"deployments":         deployments.Deployment,
		"deployments/status":  deployments.Status,
		"deployments/scale":   deployments.Scale,
		"replicasets":         replicaSets.ReplicaSet,
		"replicasets/status":  replicaSets.Status,
		"replicasets/scale":   replicaSets.Scale,
		"statefulsets":        statefulSets.StatefulSet,
		"statefulsets/status": statefulSets.Status,
		"statefulsets/scale":  statefulSets.Scale,
		"daemonsets":          daemonSets.DaemonSet,
		"daemonsets/status":   daemonSets.Status,
		"controllerrevisions": revisions,
	}, nil
}

// batchStorage builds the batch/v1 endpoints: jobs and cronjobs with their status.
func batchStorage(getter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	jobs, err := job.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	cronJobs, err := cronjob.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{
		"jobs":            jobs.Job,
		"jobs/status":     jobs.Status,
		"cronjobs":        cronJobs.CronJob,
		"cronjobs/status": cronJobs.Status,
	}, nil
}

func coreStorage(getter generic.RESTOptionsGetter, kubelet *pod.KubeletConnection, tokens *serviceAccountTokens, svcNet *serviceNetwork, slices *genericregistry.Store, budgets pod.DisruptionBudgets) (map[string]rest.Storage, error) {
	pods, err := pod.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	nodes, err := node.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	namespaces, err := namespace.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	events, err := event.NewREST(getter, corev1.Resource("events"))
	if err != nil {
		return nil, err
	}
	configMaps, err := configmap.NewREST(getter)
	if err != nil {
		return nil, err
	}
	secrets, err := secret.NewREST(getter)
	if err != nil {
		return nil, err
	}
	serviceAccounts, err := serviceaccount.NewREST(getter)
	if err != nil {
		return nil, err
	}
	services, err := service.NewStorage(getter, svcNet.ipAlloc, svcNet.nodePort)
	if err != nil {
		return nil, err
	}
	eps, err := endpoints.NewREST(getter)
	if err != nil {
		return nil, err
	}
	limitRanges, err := limitrange.NewREST(getter)
	if err != nil {
		return nil, err
	}
	quotas, err := resourcequota.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	podTemplates, err := podtemplate.NewREST(getter)
	if err != nil {
		return nil, err
	}
	rcs, err := replicationcontroller.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	claims, err := persistentvolumeclaim.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	volumes, err := persistentvolume.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	exec, attach, portForward := pod.NewStreamRESTs(pods.Pod.Store, nodes.Node.Store, kubelet)
	storage := map[string]rest.Storage{
		"pods":                     pods.Pod,
		"pods/exec":                exec,
		"pods/attach":              attach,
		"pods/portforward":         portForward,
		"pods/status":              pods.Status,
		"pods/resize":              pod.NewResizeREST(pods.Pod.Store, nodes.Node.Store),
		"pods/ephemeralcontainers": pod.NewEphemeralContainersREST(pods.Pod.Store),
		"pods/binding":             pods.Binding,
		"pods/eviction":            pod.NewEvictionREST(pods.Pod.Store, budgets),
		"pods/log":                 pod.NewLogREST(pods.Pod.Store, nodes.Node.Store, kubelet),
		"pods/proxy":               pod.NewProxyREST(pods.Pod.Store, proxyTransport),
		"bindings":                 pods.LegacyBinding,
		"nodes":                    nodes.Node,
		"nodes/status":             nodes.Status,
		"nodes/proxy":              node.NewProxyREST(nodes.Node.Store, kubelet),
		"namespaces":               namespaces.Namespace,
		"namespaces/status":        namespaces.Status,
		"namespaces/finalize":      namespaces.Finalize,
		"events":                   events,
		"configmaps":               configMaps,
		"secrets":                  secrets,
		"serviceaccounts":          serviceAccounts,
		"services":                 services.Service,
		"services/status":          services.Status,
		"services/proxy": service.NewProxyREST(services.Service.Store, pods.Pod.Store,
			sliceLister(slices), proxyTransport),
		"endpoints":    eps,
		"podtemplates": podTemplates,
		"limitranges":  limitRanges,

		"resourcequotas":        quotas.ResourceQuota,
		"resourcequotas/status": quotas.Status,

		"replicationcontrollers":        rcs.ReplicationController,
		"replicationcontrollers/status": rcs.Status,
		"replicationcontrollers/scale":  rcs.Scale,

		"persistentvolumeclaims":        claims.PersistentVolumeClaim,
		"persistentvolumeclaims/status": claims.Status,
		"persistentvolumes":             volumes.PersistentVolume,
		"persistentvolumes/status":      volumes.Status,
	}
	if tokens.issuer != nil {
		storage["serviceaccounts/token"] = serviceaccount.NewTokenREST(serviceAccounts.Store, pods.Pod.Store, secrets.Store, nodes.Node.Store,
			tokens.issuer, tokens.tokenOptions())
	}
	return storage, nil
}
