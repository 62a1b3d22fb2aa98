package pod

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// fullValidPod is a defaulted pod that sets (nearly) every field validation
// looks at, each to a valid value.
func fullValidPod() *corev1.Pod {
	q := resource.MustParse
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "web-0",
			Namespace:   "shop",
			Labels:      map[string]string{"app": "web", "example.com/tier": "front"},
			Annotations: map[string]string{"note": "anything", corev1.PodDeletionCost: "-10"},
			Finalizers:  []string{"example.com/keep"},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(q("64Mi"))}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathDirectory)}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"},
					Items:                []corev1.KeyToPath{{Key: "nginx.conf", Path: "conf/nginx.conf", Mode: ptr.To[int32](0400)}},
				}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls", DefaultMode: ptr.To[int32](0440)}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
					{Path: "tier", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['example.com/tier']"}},
					{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "web", Resource: "limits.cpu", Divisor: q("1m")}},
				}}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "api", Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "web-data"}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{"storage": q("1Gi")}},
					},
				}}}},
				{Name: "block", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "raw"}}},
			},
			InitContainers: []corev1.Container{
				{
					Name: "migrate", Image: "registry.local:5000/shop/migrate:v2", Command: []string{"/migrate"},
					Env: []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
				},
				{
					Name: "proxy", Image: "envoyproxy/envoy:v1.30", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Ports:          []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("admin")}}},
					Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("100m")}},
				},
			},
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 8080, HostPort: 80, Protocol: corev1.ProtocolTCP},
					{Name: "quic", ContainerPort: 8443, Protocol: corev1.ProtocolUDP},
					{Name: "sctp", ContainerPort: 9000, Protocol: corev1.ProtocolSCTP},
				},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "production"},
					{Name: "my.relaxed-name", Value: "ok"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: q("1Mi")}}},
					{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, Key: "log.level"}}},
					{Name: "STATE", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "scratch", Path: "state.env", Key: "STATE"}}},
				},
				EnvFrom: []corev1.EnvFromSource{
					{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-env"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-secrets"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": q("250m"), "memory": q("128Mi"), "example.com/gpu": q("1")},
					Limits:   corev1.ResourceList{"cpu": q("1"), "memory": q("256Mi"), "example.com/gpu": q("1"), "hugepages-2Mi": q("4Mi")},
				},
				ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.NotRequired}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "scratch", MountPath: "/tmp"},
					{Name: "logs", MountPath: "/var/log/nginx", SubPath: "nginx"},
					{Name: "config", MountPath: "/etc/nginx", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyIfPossible)},
					{Name: "tls", MountPath: "/etc/tls", ReadOnly: true},
					{Name: "info", MountPath: "/etc/podinfo"},
					{Name: "token", MountPath: "/var/run/secrets/tokens"},
					{Name: "data", MountPath: "/data", SubPathExpr: "$(POD_NAME)"},
					{Name: "cache", MountPath: "/cache"},
				},
				VolumeDevices:  []corev1.VolumeDevice{{Name: "block", DevicePath: "/dev/xvda"}},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}}, InitialDelaySeconds: 5},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}},
				StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, FailureThreshold: 30, TerminationGracePeriodSeconds: ptr.To[int64](10)},
				Lifecycle: &corev1.Lifecycle{
					PostStart:  &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/warm-up"}}},
					PreStop:    &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}},
					StopSignal: ptr.To(corev1.SIGQUIT),
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: ptr.To[int64](101), RunAsGroup: ptr.To[int64](101), RunAsNonRoot: ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				RestartPolicy:      ptr.To(corev1.ContainerRestartPolicyOnFailure),
				RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}},
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](60),
			ActiveDeadlineSeconds:         ptr.To[int64](3600),
			DNSPolicy:                     corev1.DNSNone,
			DNSConfig: &corev1.PodDNSConfig{
				Nameservers: []string{"10.96.0.10", "fd00::10"},
				Searches:    []string{"shop.svc.cluster.local", "_tcp.example.com", "."},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}},
			},
			NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
			ServiceAccountName: "web",
			Hostname:           "web-0",
			Subdomain:          "web",
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{
							{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}},
							{Key: "example.com/cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}},
							{Key: "example.com/broken", Operator: corev1.NodeSelectorOpDoesNotExist},
						},
						MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-9"}}},
					}}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: corev1.NodeSelectorTerm{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}},
				},
				PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}},
					TopologyKey:   "kubernetes.io/hostname",
					Namespaces:    []string{"shop", "cache"},
				}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector:  &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}},
						TopologyKey:    "topology.kubernetes.io/zone",
						MatchLabelKeys: []string{"pod-template-hash"},
					},
				}}},
			},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "shop", Effect: corev1.TaintEffectNoSchedule},
				{Key: "legacy", Value: "yes"},
				{Operator: corev1.TolerationOpExists},
			},
			HostAliases:       []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db.internal", "db"}}},
			PriorityClassName: "high-priority",
			Priority:          ptr.To[int32](1000),
			ReadinessGates:    []corev1.PodReadinessGate{{ConditionType: "example.com/load-balancer-ready"}},
			RuntimeClassName:  ptr.To("runc"),
			PreemptionPolicy:  ptr.To(corev1.PreemptLowerPriority),
			Overhead:          corev1.ResourceList{"cpu": q("10m"), "memory": q("16Mi")},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptr.To[int32](2),
				LabelSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				NodeAffinityPolicy: ptr.To(corev1.NodeInclusionPolicyHonor), NodeTaintsPolicy: ptr.To(corev1.NodeInclusionPolicyIgnore),
			}, {
				MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000),
				SupplementalGroups:  []int64{3000},
				FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
				Sysctls:             []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}, {Name: "kernel.shm_rmid_forced", Value: "1"}},
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/web.json")},
				AppArmorProfile:     &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault},
			},
			OS:              &corev1.PodOS{Name: corev1.Linux},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/quota"}},
			ResourceClaims:  []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}},
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": q("500m"), "memory": q("256Mi")},
				Limits:   corev1.ResourceList{"cpu": q("2"), "memory": q("512Mi"), "hugepages-2Mi": q("8Mi")},
			},
		},
	}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	SetDefaults(pod)
	return pod
}

func TestValidatePodFullPodIsValid(t *testing.T) {
	if errs := ValidatePod(fullValidPod()); len(errs) != 0 {
		t.Errorf("full pod: unexpected errors:\n%s", errorLines(errs))
	}
}

// minimalValidPod is the smallest defaulted pod that validates.
func minimalValidPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	SetDefaults(pod)
	return pod
}

func TestValidatePodMinimalPodIsValid(t *testing.T) {
	if errs := ValidatePod(minimalValidPod()); len(errs) != 0 {
		t.Errorf("minimal pod: unexpected errors:\n%s", errorLines(errs))
	}
}

// wantErr is one error a test expects: its field path, its type and a
// fragment of its detail ("" for none).
type wantErr struct {
	path   string
	typ    field.ErrorType
	detail string
}

func (w wantErr) String() string { return fmt.Sprintf("%s %s %q", w.path, w.typ, w.detail) }

// assertHasError fails unless errs contains an error matching want.
func assertHasError(t *testing.T, errs field.ErrorList, want wantErr) {
	t.Helper()
	for _, e := range errs {
		if e.Field == want.path && e.Type == want.typ && strings.Contains(e.Detail, want.detail) {
			return
		}
	}
	t.Errorf("want error %s, got:\n%s", want, errorLines(errs))
}

func errorLines(errs field.ErrorList) string {
	if len(errs) == 0 {
		return "  (no errors)"
	}
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s %s %q\n", e.Field, e.Type, e.Detail)
	}
	return b.String()
}
