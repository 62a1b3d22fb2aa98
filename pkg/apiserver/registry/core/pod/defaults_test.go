package pod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// defaultedContainer is a container as the defaulter leaves it when only
// name and image were given.
func defaultedContainer(name, image string, pull corev1.PullPolicy) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    image,
		ImagePullPolicy:          pull,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

func assertSamePod(t *testing.T, got, want *corev1.Pod) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("pods differ (-want +got):\n%s", diff.Diff(want, got))
	}
}

// The pod `kubectl run web --image=nginx` creates, as `kubectl get -o yaml`
// shows it on Kubernetes v1.37 (minus admission and create-time fields).
func TestSetDefaultsMinimalPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{defaultedContainer("web", "nginx", corev1.PullAlways)},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
			EnableServiceLinks:            ptr.To(true),
		},
	}
	SetDefaults(pod)
	assertSamePod(t, pod, want)
}

func TestPullPolicyFor(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"library/nginx:LATEST", corev1.PullIfNotPresent}, // tags are case sensitive
		{"nginx@" + digest, corev1.PullIfNotPresent},
		{"nginx:latest@" + digest, corev1.PullAlways},
		{"nginx:latest@sha256:abc", corev1.PullIfNotPresent}, // bad digest: does not parse
		{"registry.local:5000/team/app", corev1.PullAlways},
		{"localhost/app:v1", corev1.PullIfNotPresent},
		{"127.0.0.1:5000/app:latest", corev1.PullAlways},
		{"Nginx", corev1.PullIfNotPresent}, // upper-case repository: does not parse
		{"", corev1.PullIfNotPresent},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
	} {
		if got := pullPolicyFor(tc.image); got != tc.want {
			t.Errorf("pullPolicyFor(%q) = %s, want %s", tc.image, got, tc.want)
		}
	}
}

func TestSetDefaults(t *testing.T) {
	// base is the minimal defaulted pod; each case changes its input and
	// the expected result from there.
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
		}
	}
	defaulted := func() *corev1.Pod {
		p := base()
		p.Spec = corev1.PodSpec{
			Containers:                    []corev1.Container{defaultedContainer("c", "busybox:1.36", corev1.PullIfNotPresent)},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
			EnableServiceLinks:            ptr.To(true),
		}
		return p
	}
	mode := func(m int32) *int32 { return &m }

	for _, tc := range []struct {
		name  string
		input func(p *corev1.Pod)
		want  func(p *corev1.Pod)
	}{{
		name: "set values are kept",
		input: func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.DNSPolicy = corev1.DNSDefault
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
			p.Spec.SchedulerName = "other"
			p.Spec.EnableServiceLinks = ptr.To(false)
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		},
		want: func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.DNSPolicy = corev1.DNSDefault
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
			p.Spec.SchedulerName = "other"
			p.Spec.EnableServiceLinks = ptr.To(false)
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		},
	}, {
		name:  "negative grace period becomes 1",
		input: func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
		want:  func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1) },
	}, {
		name:  "deprecated serviceAccount fills serviceAccountName",
		input: func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "builder" },
		want: func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "builder"
			p.Spec.DeprecatedServiceAccount = "builder"
		},
	}, {
		name: "serviceAccountName wins over the deprecated field",
		input: func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "a"
			p.Spec.DeprecatedServiceAccount = "b"
		},
		want: func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "a"
			p.Spec.DeprecatedServiceAccount = "a"
		},
	}, {
		name: "hostNetwork: dnsPolicy untouched, host ports from container ports",
		input: func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP}}
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "busybox:1.36", Ports: []corev1.ContainerPort{{ContainerPort: 81}}}}
		},
		want: func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{
				{ContainerPort: 80, HostPort: 80, Protocol: corev1.ProtocolTCP},
				{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP},
			}
			p.Spec.InitContainers = []corev1.Container{defaultedContainer("i", "busybox:1.36", corev1.PullIfNotPresent)}
			p.Spec.InitContainers[0].Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 81, Protocol: corev1.ProtocolTCP}}
		},
	}, {
		name: "ports without hostNetwork get only a protocol",
		input: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
		},
		want: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
		},
	}, {
		name: "requests default to limits, per container, rounded to milli units",
		input: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"cpu": resource.MustParse("0.0001"), "memory": resource.MustParse("64Mi")},
				Requests: corev1.ResourceList{"memory": resource.MustParse("32Mi")},
			}
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "busybox:1.36", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"cpu": resource.MustParse("1")},
			}}}
		},
		want: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"cpu": resource.MustParse("1m"), "memory": resource.MustParse("64Mi")},
				Requests: corev1.ResourceList{"cpu": resource.MustParse("1m"), "memory": resource.MustParse("32Mi")},
			}
			p.Spec.InitContainers = []corev1.Container{defaultedContainer("i", "busybox:1.36", corev1.PullIfNotPresent)}
			p.Spec.InitContainers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"cpu": resource.MustParse("1")},
				Requests: corev1.ResourceList{"cpu": resource.MustParse("1")},
			}
		},
	}, {
		name: "probes, handlers and env",
		input: func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, PeriodSeconds: 3}
			c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromString("http")}}}
			c.Env = []corev1.EnvVar{
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{Path: "f", VolumeName: "v", Key: "k"}}},
			}
		},
		want: func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.LivenessProbe = &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			}
			c.ReadinessProbe = &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("")}},
				TimeoutSeconds: 1, PeriodSeconds: 3, SuccessThreshold: 1, FailureThreshold: 3,
			}
			c.StartupProbe = &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			}
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/stop", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}}}
			c.Env = []corev1.EnvVar{
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{Path: "f", VolumeName: "v", Key: "k", Optional: ptr.To(false)}}},
			}
		},
	}, {
		name: "volumes",
		input: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "none"},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, DefaultMode: mode(0600)}}},
				{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				}}}},
				{Name: "image", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "quay.io/data/set"}}},
			}
		},
		want: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "none", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathUnset)}}},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: mode(0644)}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, DefaultMode: mode(0600)}}},
				{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: mode(0644),
					Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}}},
				{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: mode(0644), Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				}}}},
				{Name: "image", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "quay.io/data/set", PullPolicy: corev1.PullAlways}}},
			}
		},
	}, {
		name: "ephemeral containers get container defaults but no requests from limits",
		input: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}}
		},
		want: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(defaultedContainer("debug", "busybox", corev1.PullAlways))}}
			p.Spec.EphemeralContainers[0].Resources.Limits = corev1.ResourceList{"cpu": resource.MustParse("1")}
		},
	}, {
		name:  "status podIP fills podIPs",
		input: func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.5" },
		want: func(p *corev1.Pod) {
			p.Status.PodIP = "10.0.0.5"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}}
		},
	}, {
		name:  "status podIPs fill podIP",
		input: func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}} },
		want: func(p *corev1.Pod) {
			p.Status.PodIP = "10.0.0.5"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
		},
	}, {
		name: "status podIP wins a mismatch",
		input: func(p *corev1.Pod) {
			p.Status.PodIP = "10.0.0.6"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}}
		},
		want: func(p *corev1.Pod) {
			p.Status.PodIP = "10.0.0.6"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.6"}}
		},
	}, {
		name: "pod-level resources are left to the strategy",
		input: func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("2")}}
		},
		want: func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("2")}}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := base(), defaulted()
			tc.input(got)
			tc.want(want)
			SetDefaults(got)
			assertSamePod(t, got, want)
		})
	}
}

// Defaults are applied again on every read from storage, so a second pass
// must change nothing.
func TestSetDefaultsIsIdempotent(t *testing.T) {
	for name, pod := range map[string]*corev1.Pod{"full pod": fullValidPod(), "minimal pod": {
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}, TerminationGracePeriodSeconds: ptr.To[int64](-5)},
		Status:     corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}},
	}} {
		t.Run(name, func(t *testing.T) {
			SetDefaults(pod)
			once := pod.DeepCopy()
			SetDefaults(pod)
			assertSamePod(t, pod, once)
		})
	}
}

func TestDefaultPodLevelResources(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	container := func(requests, limits corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
	}
	for _, tc := range []struct {
		name       string
		containers []corev1.Container
		pod, want  *corev1.ResourceRequirements
	}{{
		name:       "no pod-level resources: nothing to do",
		containers: []corev1.Container{container(rl("cpu", "1"), nil)},
	}, {
		name:       "requests from pod limits when containers ask for nothing",
		containers: []corev1.Container{container(nil, nil)},
		pod:        &corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "1Gi")},
		want:       &corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "1Gi"), Requests: rl("cpu", "2", "memory", "1Gi")},
	}, {
		name:       "requests from the containers' requests first",
		containers: []corev1.Container{container(rl("cpu", "500m"), nil), container(rl("cpu", "250m"), nil)},
		pod:        &corev1.ResourceRequirements{Limits: rl("cpu", "2")},
		want:       &corev1.ResourceRequirements{Limits: rl("cpu", "2"), Requests: rl("cpu", "750m")},
	}, {
		name:       "limits from containers when all are limited, raised to the pod request",
		containers: []corev1.Container{container(rl("memory", "1Gi"), rl("memory", "1Gi")), container(rl("memory", "1Gi"), rl("memory", "1Gi"))},
		pod:        &corev1.ResourceRequirements{Requests: rl("memory", "3Gi")},
		want:       &corev1.ResourceRequirements{Requests: rl("memory", "3Gi"), Limits: rl("memory", "3Gi")},
	}, {
		name:       "no limit when one container is unlimited",
		containers: []corev1.Container{container(rl("cpu", "1"), rl("cpu", "1")), container(rl("cpu", "1"), nil)},
		pod:        &corev1.ResourceRequirements{Requests: rl("cpu", "2")},
		want:       &corev1.ResourceRequirements{Requests: rl("cpu", "2")},
	}, {
		name:       "hugepage limits from the containers",
		containers: []corev1.Container{container(rl("hugepages-2Mi", "4Mi"), rl("hugepages-2Mi", "4Mi"))},
		pod:        &corev1.ResourceRequirements{Limits: rl("cpu", "1")},
		want:       &corev1.ResourceRequirements{Limits: rl("cpu", "1", "hugepages-2Mi", "4Mi"), Requests: rl("cpu", "1", "hugepages-2Mi", "4Mi")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.containers, Resources: tc.pod}}
			DefaultPodLevelResources(pod)
			if !apiequality.Semantic.DeepEqual(pod.Spec.Resources, tc.want) {
				t.Errorf("resources differ (-want +got):\n%s", diff.Diff(tc.want, pod.Spec.Resources))
			}
		})
	}
}
