package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/daemonset"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/deployment"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/replicaset"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/apps/statefulset"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/batch/cronjob"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/batch/job"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates/certificatesigningrequest"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates/clustertrustbundle"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates/podcertificaterequest"
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
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/clusterrolebinding"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/rolebinding"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/scheduling/priorityclass"
	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
)

// The defaults, conversions and field-selector labels of each resource join the scheme here:
// the scheme package cannot import the registries, which import it. Leases, priority
// classes, roles and bindings are selected by metadata only, which the scheme allows
// without a function.
func init() {
	s := scheme.Scheme
	addDefaults(s, pod.SetDefaults, func(l *corev1.PodList) []corev1.Pod { return l.Items })
	addDefaults(s, node.SetDefaults, func(l *corev1.NodeList) []corev1.Node { return l.Items })
	addDefaults(s, namespace.SetDefaults, func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items })
	addDefaults(s, configmap.SetDefaults, func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items })
	addDefaults(s, secret.SetDefaults, func(l *corev1.SecretList) []corev1.Secret { return l.Items })
	addDefaults(s, endpoints.SetDefaults, func(l *corev1.EndpointsList) []corev1.Endpoints { return l.Items })
	addDefaults(s, endpointslice.SetDefaults, func(l *discoveryv1.EndpointSliceList) []discoveryv1.EndpointSlice { return l.Items })
	addDefaults(s, limitrange.SetDefaults, func(l *corev1.LimitRangeList) []corev1.LimitRange { return l.Items })
	addDefaults(s, resourcequota.SetDefaults, func(l *corev1.ResourceQuotaList) []corev1.ResourceQuota { return l.Items })
	addDefaults(s, podtemplate.SetDefaults, func(l *corev1.PodTemplateList) []corev1.PodTemplate { return l.Items })
	addDefaults(s, service.SetDefaults, func(l *corev1.ServiceList) []corev1.Service { return l.Items })
	addDefaults(s, priorityclass.SetDefaults, func(l *schedulingv1.PriorityClassList) []schedulingv1.PriorityClass { return l.Items })
	addDefaults(s, rolebinding.SetDefaults, func(l *rbacv1.RoleBindingList) []rbacv1.RoleBinding { return l.Items })
	addDefaults(s, clusterrolebinding.SetDefaults, func(l *rbacv1.ClusterRoleBindingList) []rbacv1.ClusterRoleBinding { return l.Items })
	addDefaults(s, persistentvolumeclaim.SetDefaults, func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items })
	addDefaults(s, persistentvolume.SetDefaults, func(l *corev1.PersistentVolumeList) []corev1.PersistentVolume { return l.Items })
	// The workloads: apps/v1 is selected by metadata only, as upstream's, RCs also by
	// status.replicas.
	addDefaults(s, replicationcontroller.SetDefaults, func(l *corev1.ReplicationControllerList) []corev1.ReplicationController { return l.Items })
	addDefaults(s, deployment.SetDefaults, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items })
	addDefaults(s, replicaset.SetDefaults, func(l *appsv1.ReplicaSetList) []appsv1.ReplicaSet { return l.Items })
	addDefaults(s, statefulset.SetDefaults, func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items })
	addDefaults(s, daemonset.SetDefaults, func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items })
	utilruntime.Must(event.RegisterConversions(s))
	utilruntime.Must(registerQueryParameterConversions(s))

	v1 := corev1.SchemeGroupVersion
	for _, f := range []struct {
		kind   string
		fields registry.Selectable
		zero   runtime.Object
	}{
		{"Pod", pod.Fields, &corev1.Pod{}},
		{"Node", node.Fields, &corev1.Node{}},
		{"Namespace", namespace.Fields, &corev1.Namespace{}},
		{"ConfigMap", configmap.Fields, &corev1.ConfigMap{}},
		{"Secret", secret.Fields, &corev1.Secret{}},
		{"ServiceAccount", serviceaccount.Fields, &corev1.ServiceAccount{}},
		{"Service", service.Fields, &corev1.Service{}},
		{"Endpoints", endpoints.Fields, &corev1.Endpoints{}},
		{"PodTemplate", podtemplate.Fields, &corev1.PodTemplate{}},
		{"LimitRange", limitrange.Fields, &corev1.LimitRange{}},
		{"ResourceQuota", resourcequota.Fields, &corev1.ResourceQuota{}},
		{"ReplicationController", replicationcontroller.Fields, &corev1.ReplicationController{}},
		{"PersistentVolumeClaim", persistentvolumeclaim.Fields, &corev1.PersistentVolumeClaim{}},
		{"PersistentVolume", persistentvolume.Fields, &corev1.PersistentVolume{}},
	} {
		utilruntime.Must(s.AddFieldLabelConversionFunc(v1.WithKind(f.kind), registry.FieldLabelConversion(f.fields, f.zero)))
	}
	// batch/v1: Jobs are selected by status.successful too, CronJobs by metadata only.
	// PodDisruptionBudgets have no defaults (as upstream's policy/v1) and metadata fields only.
	addDefaults(s, job.SetDefaults, func(l *batchv1.JobList) []batchv1.Job { return l.Items })
	addDefaults(s, cronjob.SetDefaults, func(l *batchv1.CronJobList) []batchv1.CronJob { return l.Items })
	batch := batchv1.SchemeGroupVersion
	utilruntime.Must(s.AddFieldLabelConversionFunc(batch.WithKind("Job"), registry.FieldLabelConversion(job.Fields, &batchv1.Job{})))
	utilruntime.Must(s.AddFieldLabelConversionFunc(batch.WithKind("CronJob"), registry.FieldLabelConversion(cronjob.Fields, &batchv1.CronJob{})))

	utilruntime.Must(s.AddFieldLabelConversionFunc(v1.WithKind("Event"), event.CoreFieldLabelConversion))
	utilruntime.Must(s.AddFieldLabelConversionFunc(eventsv1.SchemeGroupVersion.WithKind("Event"), event.EventsFieldLabelConversion))

	// certificates.k8s.io/v1: requests and bundles are selected by spec.signerName, pod
	// certificate requests also by pod and node; only the latter have defaults.
	addDefaults(s, podcertificaterequest.SetDefaults, func(l *certificatesv1.PodCertificateRequestList) []certificatesv1.PodCertificateRequest {
		return l.Items
	})
	certs := certificatesv1.SchemeGroupVersion
	utilruntime.Must(s.AddFieldLabelConversionFunc(certs.WithKind("CertificateSigningRequest"), registry.FieldLabelConversion(certificatesigningrequest.Fields, &certificatesv1.CertificateSigningRequest{})))
	utilruntime.Must(s.AddFieldLabelConversionFunc(certs.WithKind("ClusterTrustBundle"), registry.FieldLabelConversion(clustertrustbundle.Fields, &certificatesv1.ClusterTrustBundle{})))
	utilruntime.Must(s.AddFieldLabelConversionFunc(certs.WithKind("PodCertificateRequest"), registry.FieldLabelConversion(podcertificaterequest.Fields, &certificatesv1.PodCertificateRequest{})))

	addAdmissionRegistrationDefaults(s)
	addNetworkingStorageDefaults(s)
	addResourceDefaults(s)
	addFlowcontrolDefaults(s)
	utilruntime.Must(addAutoscalingDefaults(s))
}

// addDefaults registers a resource's defaulting function for the object and for its list.
func addDefaults[T any, L any, PT interface {
	*T
	runtime.Object
}, PL interface {
	*L
	runtime.Object
}](s *runtime.Scheme, setDefaults func(*T), items func(PL) []T) {
	s.AddTypeDefaultingFunc(PT(new(T)), func(obj interface{}) { setDefaults(obj.(*T)) })
	s.AddTypeDefaultingFunc(PL(new(L)), func(obj interface{}) {
		list := items(obj.(PL))
		for i := range list {
			setDefaults(&list[i])
		}
	})
}
