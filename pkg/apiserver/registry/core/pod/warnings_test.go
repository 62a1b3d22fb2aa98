package pod

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The expected texts are upstream's (pkg/api/pod/warnings_test.go, v1.37.2), in the order
// upstream emits them; upstream's test compares sorted lists, berth's the exact order.

// warningCase is a template, the stored template when the case is an update, and the
// warnings both a template (at no path) and a pod of the same metadata and spec get.
type warningCase struct {
	name     string
	template *corev1.PodTemplateSpec
	old      *corev1.PodTemplateSpec
	want     []string
}

func runWarningCases(t *testing.T, cases []warningCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run("template/"+tc.name, func(t *testing.T) {
			assertWarnings(t, TemplateWarnings(nil, tc.template, tc.old), tc.want)
		})
		t.Run("pod/"+tc.name, func(t *testing.T) {
			var pod, old *corev1.Pod
			if tc.template != nil {
				pod = &corev1.Pod{ObjectMeta: tc.template.ObjectMeta, Spec: tc.template.Spec}
			}
			if tc.old != nil {
				old = &corev1.Pod{ObjectMeta: tc.old.ObjectMeta, Spec: tc.old.Spec}
			}
			assertWarnings(t, Warnings(pod, old), tc.want)
		})
	}
}

func assertWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
}

func specOnly(spec corev1.PodSpec) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: spec}
}

func withAnnotations(annotations map[string]string, spec corev1.PodSpec) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: spec}
}

// expressions is a node selector term's requirements on each key, with no values.
func expressions(keys ...string) []corev1.NodeSelectorRequirement {
	var reqs []corev1.NodeSelectorRequirement
	for _, k := range keys {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k})
	}
	return reqs
}

var deprecatedKeys = []string{`foo`, `beta.kubernetes.io/arch`, `beta.kubernetes.io/os`,
	`failure-domain.beta.kubernetes.io/region`, `failure-domain.beta.kubernetes.io/zone`, `beta.kubernetes.io/instance-type`}

const invalidValueMessage = `-1 is invalid, a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`

func TestWarnings(t *testing.T) {
	fractional := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("100m"),
		corev1.ResourceMemory:           resource.MustParse("4m"),
		corev1.ResourceEphemeralStorage: resource.MustParse("4m"),
	}
	preferredInvalid := func(value string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight:     10,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "foo", Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}},
			}},
		}}
	}
	spreadOn := func(keys ...string) []corev1.TopologySpreadConstraint {
		var cs []corev1.TopologySpreadConstraint
		for _, k := range keys {
			cs = append(cs, corev1.TopologySpreadConstraint{TopologyKey: k, LabelSelector: &metav1.LabelSelector{}})
		}
		return cs
	}
	some, none := &metav1.LabelSelector{}, (*metav1.LabelSelector)(nil)
	runWarningCases(t, []warningCase{
		{name: "null", template: nil},
		{name: "nothing to warn of", template: specOnly(corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}})},
		{
			name: "node labels in nodeSelector",
			template: specOnly(corev1.PodSpec{NodeSelector: map[string]string{
				`beta.kubernetes.io/arch`:                  `true`,
				`beta.kubernetes.io/os`:                    `true`,
				`failure-domain.beta.kubernetes.io/region`: `true`,
				`failure-domain.beta.kubernetes.io/zone`:   `true`,
				`beta.kubernetes.io/instance-type`:         `true`,
				`kubernetes.io/os`:                         `linux`,
			}}),
			want: []string{
				`spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
				`spec.nodeSelector[beta.kubernetes.io/instance-type]: deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
				`spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
				`spec.nodeSelector[failure-domain.beta.kubernetes.io/region]: deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
				`spec.nodeSelector[failure-domain.beta.kubernetes.io/zone]: deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
			},
		},
		{
			name: "the rest of the deprecated node labels",
			template: specOnly(corev1.PodSpec{NodeSelector: map[string]string{
				`app.kubernetes.io/created-by`:                  `x`,
				`scheduler.alpha.kubernetes.io/preferAvoidPods`: `x`,
				`node-role.kubernetes.io/master`:                ``,
			}}),
			want: []string{
				`spec.nodeSelector[app.kubernetes.io/created-by]: deprecated since v1.9`,
				`spec.nodeSelector[node-role.kubernetes.io/master]: use "node-role.kubernetes.io/control-plane" instead`,
				`spec.nodeSelector[scheduler.alpha.kubernetes.io/preferAvoidPods]: deprecated since v1.22; use Taints and Tolerations instead`,
			},
		},
		{
			name: "node labels in affinity requiredDuringSchedulingIgnoredDuringExecution",
			template: specOnly(corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: expressions(deprecatedKeys...)}}},
			}}}),
			want: []string{
				`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].key: beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead`,
				`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].key: beta.kubernetes.io/os is deprecated since v1.14; use "kubernetes.io/os" instead`,
				`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].key: failure-domain.beta.kubernetes.io/region is deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
				`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[4].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
				`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[5].key: beta.kubernetes.io/instance-type is deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
			},
		},
		{
			name: "node labels in affinity preferredDuringSchedulingIgnoredDuringExecution",
			template: specOnly(corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Preference: corev1.NodeSelectorTerm{MatchExpressions: expressions(deprecatedKeys...)}}},
			}}}),
			want: []string{
				`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[1].key: beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead`,
				`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[2].key: beta.kubernetes.io/os is deprecated since v1.14; use "kubernetes.io/os" instead`,
				`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[3].key: failure-domain.beta.kubernetes.io/region is deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
				`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[4].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
				`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[5].key: beta.kubernetes.io/instance-type is deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
			},
		},
		{
			name:     "creating pod with invalid value in nodeaffinity",
			template: specOnly(corev1.PodSpec{Affinity: preferredInvalid("-1")}),
			want:     []string{`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]: ` + invalidValueMessage},
		},
		{
			// Upstream's old template narrows nothing: the update warns as a create would.
			name:     "updating pod with invalid value in nodeaffinity",
			template: specOnly(corev1.PodSpec{Affinity: preferredInvalid("-1"), SchedulingGates: []corev1.PodSchedulingGate{{Name: "foo"}}}),
			old:      specOnly(corev1.PodSpec{Affinity: preferredInvalid("bar"), SchedulingGates: []corev1.PodSchedulingGate{{Name: "foo"}}}),
			want:     []string{`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]: ` + invalidValueMessage},
		},
		{
			name: "an invalid value in a required term is validation's business",
			template: specOnly(corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "foo", Operator: corev1.NodeSelectorOpIn, Values: []string{"-1"}}}}}},
			}}}),
		},
		{
			name:     "node labels in topologySpreadConstraints",
			template: specOnly(corev1.PodSpec{TopologySpreadConstraints: spreadOn(deprecatedKeys...)}),
			want: []string{
				`spec.topologySpreadConstraints[1].topologyKey: beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead`,
				`spec.topologySpreadConstraints[2].topologyKey: beta.kubernetes.io/os is deprecated since v1.14; use "kubernetes.io/os" instead`,
				`spec.topologySpreadConstraints[3].topologyKey: failure-domain.beta.kubernetes.io/region is deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
				`spec.topologySpreadConstraints[4].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
				`spec.topologySpreadConstraints[5].topologyKey: beta.kubernetes.io/instance-type is deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
			},
		},
		{
			name: "null LabelSelector in topologySpreadConstraints",
			template: specOnly(corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
				{LabelSelector: some},
				{LabelSelector: none},
				{TopologyKey: `beta.kubernetes.io/os`},
			}}),
			want: []string{
				`spec.topologySpreadConstraints[1].labelSelector: a null labelSelector results in matching no pod`,
				`spec.topologySpreadConstraints[2].topologyKey: beta.kubernetes.io/os is deprecated since v1.14; use "kubernetes.io/os" instead`,
				`spec.topologySpreadConstraints[2].labelSelector: a null labelSelector results in matching no pod`,
			},
		},
		{
			name: "null LabelSelector in PodAffinity",
			template: specOnly(corev1.PodSpec{Affinity: &corev1.Affinity{
				PodAffinity: &corev1.PodAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{{LabelSelector: some}, {LabelSelector: none}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: some}}, {PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: none}}},
				},
				PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{{LabelSelector: some}, {LabelSelector: none}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: some}}, {PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: none}}},
				},
			}}),
			want: []string{
				`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].labelSelector: a null labelSelector results in matching no pod`,
				`spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod`,
				`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].labelSelector: a null labelSelector results in matching no pod`,
				`spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod`,
			},
		},
		{
			name: "annotations",
			template: withAnnotations(map[string]string{
				`foo`: `bar`,
				`scheduler.alpha.kubernetes.io/critical-pod`:         `true`,
				`seccomp.security.alpha.kubernetes.io/pod`:           `default`,
				`container.seccomp.security.alpha.kubernetes.io/foo`: `default`,
				`security.alpha.kubernetes.io/sysctls`:               `a,b,c`,
				`security.alpha.kubernetes.io/unsafe-sysctls`:        `d,e,f`,
			}, corev1.PodSpec{Containers: []corev1.Container{{Name: "foo"}}}),
			want: []string{
				`metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead`,
				`metadata.annotations[security.alpha.kubernetes.io/sysctls]: non-functional in v1.11+; use the "sysctls" field instead`,
				`metadata.annotations[security.alpha.kubernetes.io/unsafe-sysctls]: non-functional in v1.11+; use the "sysctls" field instead`,
				`metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "seccompProfile" field instead`,
				`metadata.annotations[container.seccomp.security.alpha.kubernetes.io/foo]: non-functional in v1.27+; use the "seccompProfile" field instead`,
			},
		},
		{
			name: "seccomp fields",
			template: withAnnotations(map[string]string{
				`seccomp.security.alpha.kubernetes.io/pod`:           `default`,
				`container.seccomp.security.alpha.kubernetes.io/foo`: `default`,
			}, corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{
					Name:            "foo",
					SecurityContext: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				}},
			}),
		},
		{
			name: "duplicate hostAlias",
			template: specOnly(corev1.PodSpec{HostAliases: []corev1.HostAlias{
				{IP: "1.1.1.1"}, {IP: "1.1.1.1"}, {IP: "1.1.1.1"},
			}}),
			want: []string{
				`spec.hostAliases[1].ip: duplicate ip "1.1.1.1"`,
				`spec.hostAliases[2].ip: duplicate ip "1.1.1.1"`,
			},
		},
		{
			name: "duplicate imagePullSecret",
			template: specOnly(corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{
				{Name: "a"}, {Name: "a"}, {Name: "a"},
			}}),
			want: []string{
				`spec.imagePullSecrets[1].name: duplicate name "a"`,
				`spec.imagePullSecrets[2].name: duplicate name "a"`,
			},
		},
		{
			name:     "empty imagePullSecret",
			template: specOnly(corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: ""}}}),
			want:     []string{`spec.imagePullSecrets[0].name: invalid empty name ""`},
		},
		{
			name:     "duplicate empty imagePullSecrets",
			template: specOnly(corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: ""}, {Name: ""}}}),
			want: []string{
				`spec.imagePullSecrets[1].name: duplicate name ""`,
				`spec.imagePullSecrets[0].name: invalid empty name ""`,
				`spec.imagePullSecrets[1].name: invalid empty name ""`,
			},
		},
		{
			name: "duplicate env",
			template: specOnly(corev1.PodSpec{
				InitContainers: []corev1.Container{{Env: []corev1.EnvVar{
					{Name: "a", Value: "a"},
					{Name: "a", Value: "a"},
					{Name: "a", Value: "other"},
					{Name: "a", Value: ""},
					{Name: "a", Value: "$(a)"},
					{Name: "a", ValueFrom: &corev1.EnvVarSource{}},
					{Name: "a", Value: "$(a) $(a)"}, // no warning
				}}},
				Containers: []corev1.Container{{Env: []corev1.EnvVar{
					{Name: "b", Value: "b"},
					{Name: "b", Value: "b"},
					{Name: "b", Value: "other"},
					{Name: "b", Value: ""},
					{Name: "b", Value: "$(b)"},
					{Name: "b", ValueFrom: &corev1.EnvVarSource{}},
					{Name: "b", Value: "$(b) $(b)"}, // no warning
					{Name: "c", Value: "$(b)"},      // a new name: no warning
				}}},
			}),
			want: []string{
				`spec.initContainers[0].env[1]: hides previous definition of "a", which may be dropped when using apply`,
				`spec.initContainers[0].env[2]: hides previous definition of "a", which may be dropped when using apply`,
				`spec.initContainers[0].env[3]: hides previous definition of "a", which may be dropped when using apply`,
				`spec.initContainers[0].env[4]: hides previous definition of "a", which may be dropped when using apply`,
				`spec.initContainers[0].env[5]: hides previous definition of "a", which may be dropped when using apply`,
				`spec.containers[0].env[1]: hides previous definition of "b", which may be dropped when using apply`,
				`spec.containers[0].env[2]: hides previous definition of "b", which may be dropped when using apply`,
				`spec.containers[0].env[3]: hides previous definition of "b", which may be dropped when using apply`,
				`spec.containers[0].env[4]: hides previous definition of "b", which may be dropped when using apply`,
				`spec.containers[0].env[5]: hides previous definition of "b", which may be dropped when using apply`,
			},
		},
		{
			name: "fractional resources",
			template: specOnly(corev1.PodSpec{
				InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: fractional, Limits: fractional}}},
				Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: fractional, Limits: fractional}}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1.5")}},
				}}},
				Overhead: fractional,
			}),
			want: []string{
				`spec.overhead[memory]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.overhead[ephemeral-storage]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.initContainers[0].resources.limits[memory]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.initContainers[0].resources.requests[memory]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.initContainers[0].resources.limits[ephemeral-storage]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.initContainers[0].resources.requests[ephemeral-storage]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.containers[0].resources.limits[memory]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.containers[0].resources.requests[memory]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.containers[0].resources.limits[ephemeral-storage]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.containers[0].resources.requests[ephemeral-storage]: fractional byte value "4m" is invalid, must be an integer`,
				`spec.ephemeralContainers[0].resources.limits[memory]: fractional byte value "1500m" is invalid, must be an integer`,
			},
		},
		{
			name: "whole byte values",
			template: specOnly(corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1.5Ki"), corev1.ResourceEphemeralStorage: resource.MustParse("1G")},
			}}}}),
		},
		{
			name:     "terminationGracePeriodSeconds is negative",
			template: specOnly(corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](-1)}),
			want:     []string{`spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`},
		},
		{
			name:     "terminationGracePeriodSeconds is zero",
			template: specOnly(corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0)}),
		},
		{
			name: "dubious IP address formats",
			template: specOnly(corev1.PodSpec{
				DNSConfig:   &corev1.PodDNSConfig{Nameservers: []string{"1.2.3.4", "05.06.07.08"}},
				HostAliases: []corev1.HostAlias{{IP: "::ffff:1.2.3.4"}},
			}),
			want: []string{
				`spec.dnsConfig.nameservers[1]: non-standard IP address "05.06.07.08" is invalid: use "5.6.7.8"`,
				`spec.hostAliases[0].ip: non-standard IP address "::ffff:1.2.3.4" is invalid: use "1.2.3.4"`,
			},
		},
	})
}

func TestTemplateWarningsPath(t *testing.T) {
	// Every text names the full path of its field in the object the template sits in; the
	// overlapping-paths texts name the volume instead, as upstream's.
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{`scheduler.alpha.kubernetes.io/critical-pod`: ``}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{`beta.kubernetes.io/os`: `linux`},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4m")},
			}}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "s", Items: []corev1.KeyToPath{{Key: "a", Path: "p"}, {Key: "b", Path: "p"}},
			}}}},
		},
	}
	got := TemplateWarnings(field.NewPath("spec", "jobTemplate", "spec", "template"), template, nil)
	assertWarnings(t, got, []string{
		`spec.jobTemplate.spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
		`spec.jobTemplate.spec.template.metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead`,
		`volume "v" (Secret "s"): overlapping paths: "p" with "p"`,
		`spec.jobTemplate.spec.template.spec.containers[0].resources.limits[memory]: fractional byte value "4m" is invalid, must be an integer`,
	})
}

func TestTemplateOnlyWarnings(t *testing.T) {
	annotated := func(value string, spec corev1.PodSpec) *corev1.PodTemplateSpec {
		return withAnnotations(map[string]string{`container.apparmor.security.beta.kubernetes.io/foo`: value}, spec)
	}
	const deprecated = `template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/foo]: deprecated since v1.30; use the "appArmorProfile" field instead`
	tests := []struct {
		name     string
		template *corev1.PodTemplateSpec
		want     []string
	}{
		{
			name:     "AppArmor annotations",
			template: annotated(`unconfined`, corev1.PodSpec{Containers: []corev1.Container{{Name: "foo"}}}),
			want:     []string{deprecated},
		},
		{
			name: "AppArmor matching pod field",
			template: annotated(`unconfined`, corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}},
				Containers:      []corev1.Container{{Name: "foo"}},
			}),
		},
		{
			name: "AppArmor matching localhost pod field",
			template: annotated(`localhost/bar`, corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("bar")}},
				Containers:      []corev1.Container{{Name: "foo"}},
			}),
		},
		{
			name: "AppArmor different pod field",
			template: annotated(`localhost/foo`, corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("bar")}},
				Containers:      []corev1.Container{{Name: "foo"}},
			}),
			want: []string{deprecated},
		},
		{
			name: "AppArmor runtime default against an unconfined pod",
			template: annotated(`runtime/default`, corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}},
				Containers:      []corev1.Container{{Name: "foo"}},
			}),
			want: []string{deprecated},
		},
		{
			name: "AppArmor container field",
			template: annotated(`unconfined`, corev1.PodSpec{Containers: []corev1.Container{{
				Name:            "foo",
				SecurityContext: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}},
			}}}),
		},
		{
			name:     "AppArmor annotation of no container",
			template: annotated(`unconfined`, corev1.PodSpec{Containers: []corev1.Container{{Name: "bar"}}}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertWarnings(t, TemplateWarnings(field.NewPath("template"), tc.template, nil), tc.want)
			// A pod is warned of these as its annotations become fields, not here.
			if got := Warnings(&corev1.Pod{ObjectMeta: tc.template.ObjectMeta, Spec: tc.template.Spec}, nil); len(got) != 0 {
				t.Errorf("template-only warnings on a pod: %q", got)
			}
		})
	}
}

func TestAppArmorProfileOf(t *testing.T) {
	tests := map[string]*corev1.AppArmorProfile{
		"unconfined":      {Type: corev1.AppArmorProfileTypeUnconfined},
		"runtime/default": {Type: corev1.AppArmorProfileTypeRuntimeDefault},
		"localhost/p":     {Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("p")},
		"localhost/":      nil,
		"other":           nil,
	}
	for annotation, want := range tests {
		if got := appArmorProfileOf(annotation); !reflect.DeepEqual(got, want) {
			t.Errorf("appArmorProfileOf(%q) = %+v, want %+v", annotation, got, want)
		}
	}
}

func TestStrategyWarnings(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web.v1"},
		Spec:       corev1.PodSpec{NodeSelector: map[string]string{`beta.kubernetes.io/arch`: `amd64`}},
	}
	assertWarnings(t, Strategy.WarningsOnCreate(ctx, pod), []string{
		`metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
		`spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
	})
	pod.Name = "web"
	assertWarnings(t, Strategy.WarningsOnCreate(ctx, pod), []string{
		`spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
	})
	// Upstream warns of nothing on a pod's update.
	if w := Strategy.WarningsOnUpdate(ctx, pod, pod.DeepCopy()); len(w) != 0 {
		t.Errorf("update warnings %q", w)
	}

	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.02"}}
	pod.Status.HostIPs = []corev1.HostIP{{IP: "::ffff:192.168.0.1"}}
	assertWarnings(t, StatusStrategy.WarningsOnUpdate(ctx, pod, pod.DeepCopy()), []string{
		`status.podIPs[1].ip: non-standard IP address "10.0.0.02" is invalid: use "10.0.0.2"`,
		`status.hostIPs[0].ip: non-standard IP address "::ffff:192.168.0.1" is invalid: use "192.168.0.1"`,
	})
}
