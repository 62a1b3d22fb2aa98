package pod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// podCase changes a valid pod into one that must fail with want.
type podCase struct {
	name   string
	mutate func(p *corev1.Pod)
	want   wantErr
}

// Shorthands for the error types.
const (
	required     = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	notSupported = field.ErrorTypeNotSupported
	duplicate    = field.ErrorTypeDuplicate
	forbidden    = field.ErrorTypeForbidden
	notFound     = field.ErrorTypeNotFound
)

// webCtr is the full pod's main container.
func webCtr(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }

func createCases() []podCase {
	q := resource.MustParse
	return []podCase{
		// Metadata.
		{"namespace required", func(p *corev1.Pod) { p.Namespace = "" },
			wantErr{"metadata.namespace", required, ""}},
		{"name is a DNS subdomain", func(p *corev1.Pod) { p.Name = "Web_0" },
			wantErr{"metadata.name", invalid, "a lowercase RFC 1123 subdomain"}},
		{"label key", func(p *corev1.Pod) { p.Labels["bad key"] = "v" },
			wantErr{"metadata.labels", invalid, "name part must consist of alphanumeric characters"}},
		{"label value", func(p *corev1.Pod) { p.Labels["app"] = "-web" },
			wantErr{"metadata.labels", invalid, "a valid label must be an empty string or consist of"}},
		{"annotation key", func(p *corev1.Pod) { p.Annotations["a/b/c"] = "v" },
			wantErr{"metadata.annotations", invalid, "a valid label key must consist of"}},
		{"finalizer name", func(p *corev1.Pod) { p.Finalizers = []string{"keep"} },
			wantErr{"metadata.finalizers[0]", invalid, "name is neither a standard finalizer name nor is it fully qualified"}},
		{"mirror pod needs a node", func(p *corev1.Pod) {
			p.Annotations[corev1.MirrorPodAnnotationKey] = "x"
			p.Spec.ResourceClaims = nil
			webCtr(p).Resources.Claims = nil
		},
			wantErr{"metadata.annotations[kubernetes.io/config.mirror]", invalid, "must set spec.nodeName if mirror pod annotation is set"}},
		{"deletion cost", func(p *corev1.Pod) { p.Annotations[corev1.PodDeletionCost] = "007" },
			wantErr{"metadata.annotations[controller.kubernetes.io/pod-deletion-cost]", invalid, "must be a 32bit integer"}},
		{"seccomp annotation", func(p *corev1.Pod) { p.Annotations[corev1.SeccompPodAnnotationKey] = "strict" },
			wantErr{"metadata.annotations.seccomp.security.alpha.kubernetes.io/pod", invalid, "must be a valid seccomp profile"}},
		{"seccomp annotation matches the field", func(p *corev1.Pod) { p.Annotations[corev1.SeccompPodAnnotationKey] = "runtime/default" },
			wantErr{"spec.securityContext.seccompProfile.type", forbidden, "seccomp type in annotation and field must match"}},
		{"AppArmor annotation names a container", func(p *corev1.Pod) {
			p.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"db"] = "runtime/default"
		},
			wantErr{"metadata.annotations[container.apparmor.security.beta.kubernetes.io/db]", invalid, "container not found"}},
		{"AppArmor annotation matches the field", func(p *corev1.Pod) {
			p.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"web"] = "unconfined"
		},
			wantErr{"spec.containers[0].securityContext.appArmorProfile.type", forbidden, "apparmor type in annotation and field must match"}},

		// Containers.
		{"at least one container", func(p *corev1.Pod) { p.Spec.Containers = nil },
			wantErr{"spec.containers", required, ""}},
		{"container name is a DNS label", func(p *corev1.Pod) { webCtr(p).Name = "Web" },
			wantErr{"spec.containers[0].name", invalid, "a lowercase RFC 1123 label"}},
		{"container name required", func(p *corev1.Pod) { webCtr(p).Name = "" },
			wantErr{"spec.containers[0].name", required, ""}},
		{"container names unique", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, minimalContainer("web")) },
			wantErr{"spec.containers[1].name", duplicate, ""}},
		{"init container names unique across kinds", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "web" },
			wantErr{"spec.initContainers[0].name", duplicate, ""}},
		{"image required", func(p *corev1.Pod) { webCtr(p).Image = "" },
			wantErr{"spec.containers[0].image", required, ""}},
		{"image without surrounding space", func(p *corev1.Pod) { webCtr(p).Image = " nginx" },
			wantErr{"spec.containers[0].image", invalid, "must not have leading or trailing whitespace"}},
		{"imagePullPolicy enum", func(p *corev1.Pod) { webCtr(p).ImagePullPolicy = "Sometimes" },
			wantErr{"spec.containers[0].imagePullPolicy", notSupported, `supported values: "Always", "IfNotPresent", "Never"`}},
		{"terminationMessagePolicy required", func(p *corev1.Pod) { webCtr(p).TerminationMessagePolicy = "" },
			wantErr{"spec.containers[0].terminationMessagePolicy", required, ""}},

		// Ports.
		{"containerPort required", func(p *corev1.Pod) { webCtr(p).Ports[1].ContainerPort = 0 },
			wantErr{"spec.containers[0].ports[1].containerPort", required, ""}},
		{"containerPort range", func(p *corev1.Pod) { webCtr(p).Ports[1].ContainerPort = 70000 },
			wantErr{"spec.containers[0].ports[1].containerPort", invalid, "must be between 1 and 65535, inclusive"}},
		{"hostPort range", func(p *corev1.Pod) { webCtr(p).Ports[0].HostPort = -1 },
			wantErr{"spec.containers[0].ports[0].hostPort", invalid, "must be between 1 and 65535, inclusive"}},
		{"protocol enum", func(p *corev1.Pod) { webCtr(p).Ports[0].Protocol = "HTTP" },
			wantErr{"spec.containers[0].ports[0].protocol", notSupported, `supported values: "SCTP", "TCP", "UDP"`}},
		{"port name format", func(p *corev1.Pod) { webCtr(p).Ports[0].Name = "HTTP_1" },
			wantErr{"spec.containers[0].ports[0].name", invalid, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"}},
		{"port names unique", func(p *corev1.Pod) { webCtr(p).Ports[1].Name = "http" },
			wantErr{"spec.containers[0].ports[1].name", duplicate, ""}},
		{"host ports unique across containers", func(p *corev1.Pod) {
			c := minimalContainer("sidecar")
			c.Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 80, Protocol: corev1.ProtocolTCP}}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, wantErr{"spec.containers[1].ports[0].hostPort", duplicate, ""}},
		{"host ports match container ports with hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true; p.Spec.SecurityContext.Sysctls = nil },
			wantErr{"spec.containers[0].ports[0].hostPort", invalid, "must match `containerPort` when `hostNetwork` is true"}},

		// Environment.
		{"env name required", func(p *corev1.Pod) { webCtr(p).Env[0].Name = "" },
			wantErr{"spec.containers[0].env[0].name", required, ""}},
		{"env name has no '='", func(p *corev1.Pod) { webCtr(p).Env[0].Name = "A=B" },
			wantErr{"spec.containers[0].env[0].name", invalid, "a valid environment variable name must consist only of printable ASCII characters other than '='"}},
		{"valueFrom with one source", func(p *corev1.Pod) {
			webCtr(p).Env[2].ValueFrom.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}
		}, wantErr{"spec.containers[0].env[2].valueFrom", invalid, "may not have more than one field specified at a time"}},
		{"valueFrom without value", func(p *corev1.Pod) { webCtr(p).Env[2].Value = "x" },
			wantErr{"spec.containers[0].env[2].valueFrom", invalid, "may not be specified when `value` is not empty"}},
		{"valueFrom needs a source", func(p *corev1.Pod) { webCtr(p).Env[2].ValueFrom = &corev1.EnvVarSource{} },
			wantErr{"spec.containers[0].env[2].valueFrom", invalid, "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"}},
		{"fieldRef path", func(p *corev1.Pod) { webCtr(p).Env[2].ValueFrom.FieldRef.FieldPath = "spec.schedulerName" },
			wantErr{"spec.containers[0].env[2].valueFrom.fieldRef.fieldPath", notSupported, `"metadata.name"`}},
		{"fieldRef unknown path", func(p *corev1.Pod) { webCtr(p).Env[2].ValueFrom.FieldRef.FieldPath = "spec.foo" },
			wantErr{"spec.containers[0].env[2].valueFrom.fieldRef.fieldPath", invalid, "error converting fieldPath: field label not supported: spec.foo"}},
		{"resourceFieldRef divisor", func(p *corev1.Pod) { webCtr(p).Env[3].ValueFrom.ResourceFieldRef.Divisor = q("3") },
			wantErr{"spec.containers[0].env[3].valueFrom.resourceFieldRef.divisor", invalid, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"}},
		{"configMapKeyRef key", func(p *corev1.Pod) { webCtr(p).Env[4].ValueFrom.ConfigMapKeyRef.Key = "a b" },
			wantErr{"spec.containers[0].env[4].valueFrom.configMapKeyRef.key", invalid, "a valid config key must consist of alphanumeric characters"}},
		{"configMapKeyRef name", func(p *corev1.Pod) { webCtr(p).Env[4].ValueFrom.ConfigMapKeyRef.Name = "" },
			wantErr{"spec.containers[0].env[4].valueFrom.configMapKeyRef.name", invalid, "a lowercase RFC 1123 subdomain"}},
		{"fileKeyRef needs an emptyDir", func(p *corev1.Pod) { webCtr(p).Env[5].ValueFrom.FileKeyRef.VolumeName = "logs" },
			wantErr{"spec.containers[0].env[5].valueFrom.fileKeyRef.volumeName", invalid, "referenced volume must be of type emptyDir"}},
		{"envFrom needs a source", func(p *corev1.Pod) { webCtr(p).EnvFrom[0].ConfigMapRef = nil },
			wantErr{"spec.containers[0].envFrom", invalid, "must specify one of: `configMapRef` or `secretRef`"}},
		{"envFrom name", func(p *corev1.Pod) { webCtr(p).EnvFrom[1].SecretRef.Name = "" },
			wantErr{"spec.containers[0].envFrom[1].secretRef.name", required, ""}},

		// Resources.
		{"resource name", func(p *corev1.Pod) { webCtr(p).Resources.Limits["foo"] = q("1") },
			wantErr{"spec.containers[0].resources.limits[foo]", invalid, "must be a standard resource type or fully qualified"}},
		{"container resource name", func(p *corev1.Pod) { webCtr(p).Resources.Limits["pods"] = q("1") },
			wantErr{"spec.containers[0].resources.limits[pods]", invalid, "must be a standard resource for containers"}},
		{"quantity not negative", func(p *corev1.Pod) { webCtr(p).Resources.Requests["cpu"] = q("-1") },
			wantErr{"spec.containers[0].resources.requests[cpu]", invalid, "must be greater than or equal to 0"}},
		{"request at most the limit", func(p *corev1.Pod) { webCtr(p).Resources.Requests["cpu"] = q("2") },
			wantErr{"spec.containers[0].resources.requests", invalid, "must be less than or equal to cpu limit of 1"}},
		{"extended resource request equals limit", func(p *corev1.Pod) { webCtr(p).Resources.Limits["example.com/gpu"] = q("2") },
			wantErr{"spec.containers[0].resources.requests", invalid, "must be equal to example.com/gpu limit of 2"}},
		{"extended resource is whole", func(p *corev1.Pod) {
			webCtr(p).Resources.Limits["example.com/gpu"] = q("500m")
			webCtr(p).Resources.Requests["example.com/gpu"] = q("500m")
		}, wantErr{"spec.containers[0].resources.limits[example.com/gpu]", invalid, "must be an integer"}},
		{"hugepages in whole pages", func(p *corev1.Pod) { webCtr(p).Resources.Limits["hugepages-2Mi"] = q("3Mi") },
			wantErr{"spec.containers[0].resources.limits[hugepages-2Mi]", invalid, "3Mi is not positive integer multiple of hugepages-2Mi"}},
		{"claims name a pod claim", func(p *corev1.Pod) { webCtr(p).Resources.Claims[0].Name = "tpu" },
			wantErr{"spec.containers[0].resources.claims[0]", notFound, "must be one of the names in pod.spec.resourceClaims: gpu"}},
		{"resize policy resource", func(p *corev1.Pod) { webCtr(p).ResizePolicy[0].ResourceName = "storage" },
			wantErr{"spec.containers[0].resizePolicy", notSupported, `supported values: "cpu", "memory"`}},
		{"pod resources cover the containers", func(p *corev1.Pod) { p.Spec.Resources.Requests["cpu"] = q("100m") },
			wantErr{"spec.resources.requests[cpu]", invalid, "must be greater than or equal to aggregate container requests of 350m"}},
		{"pod resources are cpu, memory, hugepages", func(p *corev1.Pod) { p.Spec.Resources.Limits["ephemeral-storage"] = q("1Gi") },
			wantErr{"spec.resources.limits[ephemeral-storage]", notSupported, `supported values: "cpu", "hugepages-", "memory"`}},

		// Volumes.
		{"volume names unique", func(p *corev1.Pod) { p.Spec.Volumes[1].Name = "scratch" },
			wantErr{"spec.volumes[1].name", duplicate, ""}},
		{"volume name is a DNS label", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = "Scratch" },
			wantErr{"spec.volumes[0].name", invalid, "a lowercase RFC 1123 label"}},
		{"one volume source", func(p *corev1.Pod) { p.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/x"} },
			wantErr{"spec.volumes[0].hostPath", forbidden, "may not specify more than 1 volume type"}},
		{"a volume source", func(p *corev1.Pod) { p.Spec.Volumes[0].EmptyDir = nil },
			wantErr{"spec.volumes[0]", required, "must specify a volume type"}},
		{"emptyDir sizeLimit", func(p *corev1.Pod) { p.Spec.Volumes[0].EmptyDir.SizeLimit = ptr.To(q("-1")) },
			wantErr{"spec.volumes[0].emptyDir.sizeLimit", forbidden, "SizeLimit field must be a valid resource quantity"}},
		{"hostPath path required", func(p *corev1.Pod) { p.Spec.Volumes[1].HostPath.Path = "" },
			wantErr{"spec.volumes[1].hostPath.path", required, ""}},
		{"hostPath type", func(p *corev1.Pod) { p.Spec.Volumes[1].HostPath.Type = ptr.To[corev1.HostPathType]("Pipe") },
			wantErr{"spec.volumes[1].hostPath.type", notSupported, `"DirectoryOrCreate"`}},
		{"configMap name required", func(p *corev1.Pod) { p.Spec.Volumes[2].ConfigMap.Name = "" },
			wantErr{"spec.volumes[2].configMap.name", required, ""}},
		{"item path without ..", func(p *corev1.Pod) { p.Spec.Volumes[2].ConfigMap.Items[0].Path = "conf/../../x" },
			wantErr{"spec.volumes[2].configMap.items[0].path", invalid, "must not contain '..'"}},
		{"item path relative", func(p *corev1.Pod) { p.Spec.Volumes[2].ConfigMap.Items[0].Path = "/etc/x" },
			wantErr{"spec.volumes[2].configMap.items[0].path", invalid, "must be a relative path"}},
		{"item path not reserved", func(p *corev1.Pod) { p.Spec.Volumes[2].ConfigMap.Items[0].Path = "..data" },
			wantErr{"spec.volumes[2].configMap.items[0].path", invalid, "must not start with '..'"}},
		{"item key required", func(p *corev1.Pod) { p.Spec.Volumes[2].ConfigMap.Items[0].Key = "" },
			wantErr{"spec.volumes[2].configMap.items[0].key", required, ""}},
		{"defaultMode range", func(p *corev1.Pod) { p.Spec.Volumes[3].Secret.DefaultMode = ptr.To[int32](01000) },
			wantErr{"spec.volumes[3].secret.defaultMode", invalid, "must be a number between 0 and 0777 (octal), both inclusive"}},
		{"secretName required", func(p *corev1.Pod) { p.Spec.Volumes[3].Secret.SecretName = "" },
			wantErr{"spec.volumes[3].secret.secretName", required, ""}},
		{"downwardAPI volume field", func(p *corev1.Pod) { p.Spec.Volumes[4].DownwardAPI.Items[0].FieldRef.FieldPath = "spec.nodeName" },
			wantErr{"spec.volumes[4].downwardAPI.fieldRef.fieldPath", notSupported, `"metadata.annotations"`}},
		{"projected token lifetime", func(p *corev1.Pod) {
			p.Spec.Volumes[5].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds = ptr.To[int64](60)
		},
			wantErr{"spec.volumes[5].projected.sources[0].serviceAccountToken.expirationSeconds", invalid, "may not specify a duration less than 10 minutes"}},
		{"projected paths unique", func(p *corev1.Pod) {
			p.Spec.Volumes[5].Projected.Sources[1].ConfigMap.Items[0].Path = "token2"
			addProjectedItem(p, "token2")
		},
			wantErr{"spec.volumes[5].projected", invalid, "conflicting duplicate paths"}},
		{"projected token needs a service account", func(p *corev1.Pod) { p.Spec.ServiceAccountName = ""; p.Spec.DeprecatedServiceAccount = "" },
			wantErr{"spec.volumes[5].projected.sources[0].serviceAccountToken", forbidden, "must not be specified when serviceAccountName is not set"}},
		{"ephemeral claim access modes", func(p *corev1.Pod) { p.Spec.Volumes[7].Ephemeral.VolumeClaimTemplate.Spec.AccessModes = nil },
			wantErr{"spec.volumes[7].ephemeral.volumeClaimTemplate.spec.accessModes", required, "at least 1 access mode is required"}},

		// Mounts and devices.
		{"mount names a volume", func(p *corev1.Pod) { webCtr(p).VolumeMounts[0].Name = "missing" },
			wantErr{"spec.containers[0].volumeMounts[0].name", notFound, ""}},
		{"mountPath required", func(p *corev1.Pod) { webCtr(p).VolumeMounts[0].MountPath = "" },
			wantErr{"spec.containers[0].volumeMounts[0].mountPath", required, ""}},
		{"mountPath unique", func(p *corev1.Pod) { webCtr(p).VolumeMounts[1].MountPath = "/tmp" },
			wantErr{"spec.containers[0].volumeMounts[1].mountPath", invalid, "must be unique"}},
		{"subPath relative", func(p *corev1.Pod) { webCtr(p).VolumeMounts[1].SubPath = "/nginx" },
			wantErr{"spec.containers[0].volumeMounts.subPath", invalid, "must be a relative path"}},
		{"subPath and subPathExpr exclusive", func(p *corev1.Pod) { webCtr(p).VolumeMounts[1].SubPathExpr = "$(X)" },
			wantErr{"spec.containers[0].volumeMounts[1].subPathExpr", invalid, "subPathExpr and subPath are mutually exclusive"}},
		{"bidirectional propagation needs privilege", func(p *corev1.Pod) {
			webCtr(p).VolumeMounts[0].MountPropagation = ptr.To(corev1.MountPropagationBidirectional)
		}, wantErr{"spec.containers[0].volumeMounts.mountPropagation", forbidden, "Bidirectional mount propagation is available only to privileged containers"}},
		{"recursive read-only needs readOnly", func(p *corev1.Pod) { webCtr(p).VolumeMounts[2].ReadOnly = false },
			wantErr{"spec.containers[0].volumeMounts.recursiveReadOnly", forbidden, "may only be specified when readOnly is true"}},
		{"block devices come from claims", func(p *corev1.Pod) {
			webCtr(p).VolumeDevices[0].Name = "scratch"
			webCtr(p).VolumeMounts[0].Name = "cache"
			webCtr(p).VolumeMounts[7].Name = "block"
		},
			wantErr{"spec.containers[0].volumeDevices[0].name", invalid, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"}},

		// Probes and lifecycle.
		{"probe handler required", func(p *corev1.Pod) { webCtr(p).LivenessProbe.HTTPGet = nil },
			wantErr{"spec.containers[0].livenessProbe", required, "must specify a handler type"}},
		{"probe has one handler", func(p *corev1.Pod) {
			webCtr(p).LivenessProbe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}
		},
			wantErr{"spec.containers[0].livenessProbe.tcpSocket", forbidden, "may not specify more than 1 handler type"}},
		{"liveness successThreshold is 1", func(p *corev1.Pod) { webCtr(p).LivenessProbe.SuccessThreshold = 2 },
			wantErr{"spec.containers[0].livenessProbe.successThreshold", invalid, "must be 1"}},
		{"startup successThreshold is 1", func(p *corev1.Pod) { webCtr(p).StartupProbe.SuccessThreshold = 3 },
			wantErr{"spec.containers[0].startupProbe.successThreshold", invalid, "must be 1"}},
		{"probe period not negative", func(p *corev1.Pod) { webCtr(p).ReadinessProbe.PeriodSeconds = -1 },
			wantErr{"spec.containers[0].readinessProbe.periodSeconds", invalid, "must be greater than or equal to 0"}},
		{"readiness has no grace period", func(p *corev1.Pod) { webCtr(p).ReadinessProbe.TerminationGracePeriodSeconds = ptr.To[int64](5) },
			wantErr{"spec.containers[0].readinessProbe.terminationGracePeriodSeconds", invalid, "must not be set for readinessProbes"}},
		{"httpGet scheme", func(p *corev1.Pod) { webCtr(p).LivenessProbe.HTTPGet.Scheme = "FTP" },
			wantErr{"spec.containers[0].livenessProbe.httpGet.scheme", notSupported, `supported values: "HTTP", "HTTPS"`}},
		{"httpGet port", func(p *corev1.Pod) { webCtr(p).LivenessProbe.HTTPGet.Port = intstr.FromInt32(0) },
			wantErr{"spec.containers[0].livenessProbe.httpGet.port", invalid, "must be between 1 and 65535, inclusive"}},
		{"exec command required", func(p *corev1.Pod) { webCtr(p).Lifecycle.PostStart.Exec.Command = nil },
			wantErr{"spec.containers[0].lifecycle.postStart.exec.command", required, ""}},
		{"sleep within the grace period", func(p *corev1.Pod) { webCtr(p).Lifecycle.PreStop.Sleep.Seconds = 61 },
			wantErr{"spec.containers[0].lifecycle.preStop.sleep", invalid, "must be non-negative and less than terminationGracePeriodSeconds (60)"}},
		{"stop signal needs an OS", func(p *corev1.Pod) { p.Spec.OS = nil },
			wantErr{"spec.containers[0].lifecycle.stopSignal", forbidden, "may not be set for containers with empty `spec.os.name`"}},
		{"init containers have no probes", func(p *corev1.Pod) { p.Spec.InitContainers[0].LivenessProbe = webCtr(p).LivenessProbe },
			wantErr{"spec.initContainers[0].livenessProbe", forbidden, "may not be set for init containers without restartPolicy=Always"}},
		{"init container restartPolicy enum", func(p *corev1.Pod) {
			p.Spec.InitContainers[1].RestartPolicy = ptr.To[corev1.ContainerRestartPolicy]("Sometimes")
		},
			wantErr{"spec.initContainers[1].restartPolicy", notSupported, `supported values: "Always", "Never", "OnFailure"`}},
		{"restart rules need a restartPolicy", func(p *corev1.Pod) { webCtr(p).RestartPolicy = nil },
			wantErr{"spec.containers[0].restartPolicy", required, "must specify restartPolicy when restart rules are used"}},

		// Pod-wide fields.
		{"restartPolicy enum", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			wantErr{"spec.restartPolicy", notSupported, `supported values: "Always", "OnFailure", "Never"`}},
		{"dnsPolicy required", func(p *corev1.Pod) { p.Spec.DNSPolicy = "" },
			wantErr{"spec.dnsPolicy", required, ""}},
		{"dnsPolicy enum", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" },
			wantErr{"spec.dnsPolicy", notSupported, `supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`}},
		{"dnsPolicy None needs nameservers", func(p *corev1.Pod) { p.Spec.DNSConfig.Nameservers = nil },
			wantErr{"spec.dnsConfig.nameservers", required, "must provide at least one DNS nameserver when `dnsPolicy` is None"}},
		{"nameserver is an IP", func(p *corev1.Pod) { p.Spec.DNSConfig.Nameservers[0] = "dns.local" },
			wantErr{"spec.dnsConfig.nameservers[0]", invalid, "must be a valid IP address"}},
		{"at most 3 nameservers", func(p *corev1.Pod) {
			p.Spec.DNSConfig.Nameservers = []string{"1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4"}
		},
			wantErr{"spec.dnsConfig.nameservers", invalid, "must not have more than 3 nameservers"}},
		{"search domain", func(p *corev1.Pod) { p.Spec.DNSConfig.Searches[0] = "Bad..domain" },
			wantErr{"spec.dnsConfig.searches[0]", invalid, "a lowercase RFC 1123 subdomain"}},
		{"hostname is a DNS label", func(p *corev1.Pod) { p.Spec.Hostname = "web.0" },
			wantErr{"spec.hostname", invalid, "must not contain dots"}},
		{"subdomain is a DNS label", func(p *corev1.Pod) { p.Spec.Subdomain = "Web" },
			wantErr{"spec.subdomain", invalid, "a lowercase RFC 1123 label"}},
		{"nodeName is a DNS subdomain", func(p *corev1.Pod) { p.Spec.NodeName = "Node_1"; p.Spec.SchedulingGates = nil },
			wantErr{"spec.nodeName", invalid, "a lowercase RFC 1123 subdomain"}},
		{"nodeName waits for scheduling gates", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" },
			wantErr{"spec.nodeName", forbidden, "cannot be set until all schedulingGates have been cleared"}},
		{"nodeSelector values", func(p *corev1.Pod) { p.Spec.NodeSelector["zone"] = "a b" },
			wantErr{"spec.nodeSelector", invalid, "a valid label must be an empty string"}},
		{"serviceAccountName", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "Web"; p.Spec.DeprecatedServiceAccount = "Web" },
			wantErr{"spec.serviceAccountName", invalid, "a lowercase RFC 1123 subdomain"}},
		{"deprecated serviceAccount in step", func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "other" },
			wantErr{"spec.deprecatedServiceAccount", invalid, `must be the same as serviceAccountName: "web"`}},
		{"priorityClassName", func(p *corev1.Pod) { p.Spec.PriorityClassName = "High" },
			wantErr{"spec.priorityClassName", invalid, "a lowercase RFC 1123 subdomain"}},
		{"preemptionPolicy enum", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr.To[corev1.PreemptionPolicy]("Always") },
			wantErr{"spec.preemptionPolicy", notSupported, `supported values: "PreemptLowerPriority", "Never"`}},
		{"runtimeClassName", func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("gVisor") },
			wantErr{"spec.runtimeClassName", invalid, "a lowercase RFC 1123 subdomain"}},
		{"activeDeadlineSeconds positive", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
			wantErr{"spec.activeDeadlineSeconds", invalid, "must be between 1 and 2147483647, inclusive"}},
		{"grace period not negative", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1)
			webCtr(p).Lifecycle.PreStop = nil
		},
			wantErr{"spec.terminationGracePeriodSeconds", invalid, "must be greater than or equal to 0"}},
		{"grace period required", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil },
			wantErr{"spec.terminationGracePeriodSeconds", required, ""}},
		{"readiness gate", func(p *corev1.Pod) { p.Spec.ReadinessGates[0].ConditionType = "a/b/c" },
			wantErr{"spec.readinessGates[0].conditionType", invalid, "a valid label key must consist of"}},
		{"scheduling gate names unique", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, p.Spec.SchedulingGates[0])
		},
			wantErr{"spec.schedulingGates[1]", duplicate, ""}},
		{"scheduling gate name", func(p *corev1.Pod) { p.Spec.SchedulingGates[0].Name = "bad name" },
			wantErr{"spec.schedulingGates[0]", invalid, "name part must consist of alphanumeric characters"}},
		{"host alias IP", func(p *corev1.Pod) { p.Spec.HostAliases[0].IP = "10.1.2" },
			wantErr{"spec.hostAliases[0].ip", invalid, "must be a valid IP address"}},
		{"resource claim has one source", func(p *corev1.Pod) { p.Spec.ResourceClaims[0].ResourceClaimName = ptr.To("c") },
			wantErr{"spec.resourceClaims[0]", invalid, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"}},
		{"ephemeral containers only through the subresource", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(minimalContainer("debug"))}}
		}, wantErr{"spec.ephemeralContainers", forbidden, "cannot be set on create"}},

		// Scheduling.
		{"node affinity In needs values", func(p *corev1.Pod) { nodeTerm(p).MatchExpressions[0].Values = nil },
			wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values", required, "must be specified when `operator` is 'In' or 'NotIn'"}},
		{"node affinity Exists has no values", func(p *corev1.Pod) { nodeTerm(p).MatchExpressions[2].Values = []string{"x"} },
			wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values", forbidden, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}},
		{"node affinity Gt has one value", func(p *corev1.Pod) { nodeTerm(p).MatchExpressions[1].Values = []string{"1", "2"} },
			wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values", required, "must be specified single value when `operator` is 'Lt' or 'Gt'"}},
		{"node affinity operator", func(p *corev1.Pod) { nodeTerm(p).MatchExpressions[0].Operator = "Near" },
			wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator", invalid, "not a valid selector operator"}},
		{"node affinity value", func(p *corev1.Pod) { nodeTerm(p).MatchExpressions[0].Values[0] = "a b" },
			wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]", invalid, "a valid label must be an empty string"}},
		{"node selector terms required", func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = nil
		}, wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", required, "must have at least one node selector term"}},
		{"node field selector key", func(p *corev1.Pod) { nodeTerm(p).MatchFields[0].Key = "spec.nodeName" },
			wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key", invalid, "not a valid field selector key"}},
		{"preferred weight", func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 0
		},
			wantErr{"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", invalid, "must be in the range 1-100"}},
		{"pod affinity topologyKey", func(p *corev1.Pod) {
			p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey = ""
		},
			wantErr{"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", required, "can not be empty"}},
		{"pod affinity selector", func(p *corev1.Pod) {
			p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels["app"] = "a b"
		}, wantErr{"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels", invalid, "a valid label must be an empty string"}},
		{"pod affinity namespaces", func(p *corev1.Pod) {
			p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].Namespaces[0] = "Shop"
		},
			wantErr{"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespace", invalid, "a lowercase RFC 1123 label"}},
		{"pod anti-affinity weight", func(p *corev1.Pod) {
			p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 101
		},
			wantErr{"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", invalid, "must be in the range 1-100"}},
		{"matchLabelKeys not in the selector too", func(p *corev1.Pod) {
			term := &p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
			term.MatchLabelKeys = []string{"app"}
			term.LabelSelector.MatchLabels = map[string]string{"app": "web"}
		}, wantErr{"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm[0]", invalid, "exists in both matchLabelKeys and labelSelector"}},
		{"toleration Exists has no value", func(p *corev1.Pod) { p.Spec.Tolerations[0].Value = "x" },
			wantErr{"spec.tolerations[0].operator", invalid, "value must be empty when `operator` is 'Exists'"}},
		{"toleration effect enum", func(p *corev1.Pod) { p.Spec.Tolerations[1].Effect = "NoRun" },
			wantErr{"spec.tolerations[1].effect", notSupported, `supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`}},
		{"tolerationSeconds only with NoExecute", func(p *corev1.Pod) { p.Spec.Tolerations[1].TolerationSeconds = ptr.To[int64](10) },
			wantErr{"spec.tolerations[1].effect", invalid, "effect must be 'NoExecute' when `tolerationSeconds` is set"}},
		{"empty toleration key needs Exists", func(p *corev1.Pod) { p.Spec.Tolerations[3].Operator = corev1.TolerationOpEqual },
			wantErr{"spec.tolerations[3].operator", invalid, "operator must be Exists when `key` is empty"}},
		{"toleration operator enum", func(p *corev1.Pod) { p.Spec.Tolerations[1].Operator = "Matches" },
			wantErr{"spec.tolerations[1].operator", notSupported, `supported values: "Equal", "Exists"`}},
		{"toleration key", func(p *corev1.Pod) { p.Spec.Tolerations[1].Key = "bad key" },
			wantErr{"spec.tolerations[1].key", invalid, "name part must consist of alphanumeric characters"}},
		{"maxSkew positive", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].MaxSkew = 0 },
			wantErr{"spec.topologySpreadConstraints[0].maxSkew", invalid, "must be greater than zero"}},
		{"whenUnsatisfiable enum", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[1].WhenUnsatisfiable = "Maybe" },
			wantErr{"spec.topologySpreadConstraints[1].whenUnsatisfiable", notSupported, `supported values: "DoNotSchedule", "ScheduleAnyway"`}},
		{"spread topologyKey", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[1].TopologyKey = "" },
			wantErr{"spec.topologySpreadConstraints[1].topologyKey", required, "can not be empty"}},
		{"minDomains only with DoNotSchedule", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable = corev1.ScheduleAnyway },
			wantErr{"spec.topologySpreadConstraints[0].minDomains", invalid, "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"}},
		{"minDomains positive", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].MinDomains = ptr.To[int32](0) },
			wantErr{"spec.topologySpreadConstraints[0].minDomains", invalid, "must be greater than zero"}},
		{"spread constraints unique", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints[1].TopologyKey = "topology.kubernetes.io/zone"
			p.Spec.TopologySpreadConstraints[1].WhenUnsatisfiable = corev1.DoNotSchedule
		}, wantErr{"spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}", duplicate, ""}},
		{"node inclusion policy", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = ptr.To[corev1.NodeInclusionPolicy]("Maybe")
		},
			wantErr{"spec.topologySpreadConstraints[0].nodeTaintsPolicy", notSupported, `supported values: "Honor", "Ignore"`}},

		// Security.
		{"pod runAsUser range", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](-1) },
			wantErr{"spec.securityContext.runAsUser", invalid, "must be between 0 and 2147483647, inclusive"}},
		{"container runAsUser range", func(p *corev1.Pod) { webCtr(p).SecurityContext.RunAsUser = ptr.To[int64](-1) },
			wantErr{"spec.containers[0].securityContext.runAsUser", invalid, "must be between 0 and 2147483647, inclusive"}},
		{"sysctl name", func(p *corev1.Pod) { p.Spec.SecurityContext.Sysctls[0].Name = "Net.IPv4" },
			wantErr{"spec.securityContext.sysctls[0].name", invalid, "must have at most 253 characters and match regex"}},
		{"sysctl names unique", func(p *corev1.Pod) { p.Spec.SecurityContext.Sysctls[1].Name = p.Spec.SecurityContext.Sysctls[0].Name },
			wantErr{"spec.securityContext.sysctls[1].name", duplicate, ""}},
		{"no net sysctls with hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			wantErr{"spec.securityContext.sysctls[0].name", invalid, "may not be specified when 'hostNetwork' is true"}},
		{"fsGroupChangePolicy enum", func(p *corev1.Pod) {
			p.Spec.SecurityContext.FSGroupChangePolicy = ptr.To[corev1.PodFSGroupChangePolicy]("Never")
		},
			wantErr{"spec.securityContext.fsGroupChangePolicy", notSupported, `supported values: "Always", "OnRootMismatch"`}},
		{"seccomp localhost needs a profile", func(p *corev1.Pod) { p.Spec.SecurityContext.SeccompProfile.LocalhostProfile = nil },
			wantErr{"spec.securityContext.seccompProfile.localhostProfile", required, "must be set when seccomp type is Localhost"}},
		{"no privileged container without escalation", func(p *corev1.Pod) { webCtr(p).SecurityContext.Privileged = ptr.To(true) },
			wantErr{"spec.containers[0].securityContext", invalid, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"}},
		{"unmasked /proc needs a user namespace", func(p *corev1.Pod) { webCtr(p).SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount) },
			wantErr{"spec.containers[0].securityContext.procMount", invalid, "`hostUsers` must be false to use `Unmasked`"}},
		{"user namespace without hostPID", func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(false); p.Spec.HostPID = true },
			wantErr{"spec.HostPID", forbidden, "when `hostUsers` is false"}},
		{"shareProcessNamespace without hostPID", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true); p.Spec.HostPID = true },
			wantErr{"spec.shareProcessNamespace", invalid, "ShareProcessNamespace and HostPID cannot both be enabled"}},
		{"os enum", func(p *corev1.Pod) { p.Spec.OS.Name = "plan9" },
			wantErr{"spec.os", notSupported, `supported values: "linux", "windows"`}},
		{"no Linux settings on Windows", func(p *corev1.Pod) { p.Spec.OS.Name = corev1.Windows },
			wantErr{"spec.securityContext.runAsUser", forbidden, "cannot be set for a windows pod"}},
	}
}

func TestValidatePod(t *testing.T) {
	for _, tc := range createCases() {
		t.Run(tc.name, func(t *testing.T) {
			pod := fullValidPod()
			tc.mutate(pod)
			assertHasError(t, ValidatePod(pod), tc.want)
		})
	}
}

func minimalContainer(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", ImagePullPolicy: corev1.PullAlways,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}
}

// nodeTerm is the full pod's required node selector term.
func nodeTerm(p *corev1.Pod) *corev1.NodeSelectorTerm {
	return &p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
}

// addProjectedItem adds a configMap file at path to the full pod's projected volume.
func addProjectedItem(p *corev1.Pod, path string) {
	p.Spec.Volumes[5].Projected.Sources = append(p.Spec.Volumes[5].Projected.Sources, corev1.VolumeProjection{
		ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "other"},
			Items: []corev1.KeyToPath{{Key: "k", Path: path}}}})
}
