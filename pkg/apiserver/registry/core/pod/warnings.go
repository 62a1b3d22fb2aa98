package pod

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the warnings of a pod's or a pod template's write: what the API server
// accepts but tells the client about in Warning headers (kubectl prints "Warning: ..."),
// because it is deprecated, does nothing, or is probably a mistake. The rules, their texts and
// their order are upstream's (pkg/api/pod/warnings.go); they run after validation, so they
// see only valid objects.

// Warnings are the warnings of writing pod; old is the stored pod on an update, nil on a
// create. As upstream's v1.37 GetWarningsForPod, old narrows nothing: an update's warnings
// are all of the new pod's. (Upstream's pod strategy asks for none on update at all.) The
// deprecated AppArmor annotations are not warned of here: upstream warns of them on a pod
// as it copies them into the profile fields on create.
func Warnings(pod, old *corev1.Pod) []string {
	if pod == nil {
		return nil
	}
	return specWarnings(nil, &pod.ObjectMeta, &pod.Spec, false)
}

// TemplateWarnings are the warnings of writing template, which sits at path in its object
// ("spec.template", "template"): each text starts with the full path of the field it is
// about. old is the stored template on an update, nil on a create; as upstream's v1.37
// GetWarningsForPodTemplate, it narrows nothing. The workloads' strategies decide whether an
// update warns at all: upstream's warn only when the update changed the spec.
func TemplateWarnings(path *field.Path, template, old *corev1.PodTemplateSpec) []string {
	if template == nil {
		return nil
	}
	return specWarnings(path, &template.ObjectMeta, &template.Spec, true)
}

// ClaimSpecWarnings are the warnings of a PersistentVolumeClaim spec at path (an ephemeral
// volume's claim template, a StatefulSet's volumeClaimTemplates): a storage size in
// fractions of a byte.
func ClaimSpecWarnings(path *field.Path, spec *corev1.PersistentVolumeClaimSpec) []string {
	var warnings []string
	resources := path.Child("resources")
	warnings = append(warnings, fractionalBytes(spec.Resources.Requests, corev1.ResourceStorage, resources.Child("requests"))...)
	return append(warnings, fractionalBytes(spec.Resources.Limits, corev1.ResourceStorage, resources.Child("limits"))...)
}

// deprecatedNodeLabels are the node labels a selector should no longer use, with what to say
// (upstream's pkg/api/node list).
var deprecatedNodeLabels = map[string]string{
	`beta.kubernetes.io/arch`:                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	`beta.kubernetes.io/os`:                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	`failure-domain.beta.kubernetes.io/region`:      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	`failure-domain.beta.kubernetes.io/zone`:        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	`beta.kubernetes.io/instance-type`:              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	`app.kubernetes.io/created-by`:                  `deprecated since v1.9`,
	`scheduler.alpha.kubernetes.io/preferAvoidPods`: `deprecated since v1.22; use Taints and Tolerations instead`,
	`node-role.kubernetes.io/master`:                `use "node-role.kubernetes.io/control-plane" instead`,
}

// deprecatedAnnotations are the pod annotations that no longer do anything, in upstream's
// order.
var deprecatedAnnotations = []struct{ key, message string }{
	{`scheduler.alpha.kubernetes.io/critical-pod`, `non-functional in v1.16+; use the "priorityClassName" field instead`},
	{`security.alpha.kubernetes.io/sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
	{`security.alpha.kubernetes.io/unsafe-sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
}

const nullSelectorMessage = "a null labelSelector results in matching no pod"

// specWarnings are the warnings of a pod's or a template's spec and metadata; path is where
// they sit (nil for a pod). template turns on the AppArmor annotation warning, which a pod
// gets elsewhere upstream.
func specWarnings(path *field.Path, meta *metav1.ObjectMeta, spec *corev1.PodSpec, template bool) []string {
	specPath := path.Child("spec")
	var warnings []string
	warnings = append(warnings, nodeLabelWarnings(spec, specPath)...)
	warnings = append(warnings, annotationWarnings(path.Child("metadata", "annotations"), meta.Annotations)...)
	warnings = append(warnings, volumeWarnings(spec.Volumes, specPath.Child("volumes"))...)
	warnings = append(warnings, overlappingPathWarnings(spec.Volumes)...)
	warnings = append(warnings, duplicateWarnings(spec, specPath)...)
	overhead := specPath.Child("overhead")
	warnings = append(warnings, fractionalBytes(spec.Overhead, corev1.ResourceMemory, overhead)...)
	warnings = append(warnings, fractionalBytes(spec.Overhead, corev1.ResourceEphemeralStorage, overhead)...)
	warnings = append(warnings, containerWarnings(path, meta.Annotations, spec, template)...)
	warnings = append(warnings, portWarnings(spec, specPath)...)
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		warnings = append(warnings, fmt.Sprintf("%s: must be >= 0; negative values are invalid and will be treated as 1", specPath.Child("terminationGracePeriodSeconds")))
	}
	if a := spec.Affinity; a != nil {
		affinityPath := specPath.Child("affinity")
		if a.PodAffinity != nil {
			p := affinityPath.Child("podAffinity")
			warnings = append(warnings, podAffinityWarnings(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
		if a.PodAntiAffinity != nil {
			p := affinityPath.Child("podAntiAffinity")
			warnings = append(warnings, podAffinityWarnings(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
	}
	// IPs in forms that parse but are not canonical (leading zeros, IPv4-mapped IPv6).
	if spec.DNSConfig != nil {
		for i, ns := range spec.DNSConfig.Nameservers {
			warnings = append(warnings, validation.GetWarningsForIP(specPath.Child("dnsConfig", "nameservers").Index(i), ns)...)
		}
	}
	for i, a := range spec.HostAliases {
		warnings = append(warnings, validation.GetWarningsForIP(specPath.Child("hostAliases").Index(i).Child("ip"), a.IP)...)
	}
	return warnings
}

// nodeLabelWarnings warn of deprecated node labels in the node selector, the node affinity
// and the topology spread constraints, and of topology spread constraints that select no pod.
func nodeLabelWarnings(spec *corev1.PodSpec, specPath *field.Path) []string {
	var warnings []string
	// Upstream walks the map in Go's random order; sorted keys are one such order, and a
	// stable one.
	for _, k := range slices.Sorted(maps.Keys(spec.NodeSelector)) {
		if msg, ok := deprecatedNodeLabels[k]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", specPath.Child("nodeSelector").Key(k), msg))
		}
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		na := spec.Affinity.NodeAffinity
		naPath := specPath.Child("affinity", "nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			termsPath := naPath.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			for i, term := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				warnings = append(warnings, nodeSelectorTermWarnings(&term, false, termsPath.Index(i))...)
			}
		}
		preferredPath := naPath.Child("preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			warnings = append(warnings, nodeSelectorTermWarnings(&term.Preference, true, preferredPath.Index(i).Child("preference"))...)
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		p := specPath.Child("topologySpreadConstraints").Index(i)
		if msg, ok := deprecatedNodeLabels[c.TopologyKey]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s is %s", p.Child("topologyKey"), c.TopologyKey, msg))
		}
		if c.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: %s", p.Child("labelSelector"), nullSelectorMessage))
		}
	}
	return warnings
}

// nodeSelectorTermWarnings warn of deprecated label keys in a node selector term and, for a
// preferred term (checkValues), of values no label can have: validation lets them through
// there since a preference that matches nothing is harmless, but it is surely a mistake.
func nodeSelectorTermWarnings(term *corev1.NodeSelectorTerm, checkValues bool, termPath *field.Path) []string {
	var warnings []string
	for i, r := range term.MatchExpressions {
		p := termPath.Child("matchExpressions").Index(i)
		if msg, ok := deprecatedNodeLabels[r.Key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s is %s", p.Child("key"), r.Key, msg))
		}
		if !checkValues {
			continue
		}
		for j, v := range r.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				warnings = append(warnings, fmt.Sprintf("%s: %s is invalid, %s", p.Child("values").Index(j), v, msg))
			}
		}
	}
	return warnings
}

func annotationWarnings(annotationsPath *field.Path, annotations map[string]string) []string {
	var warnings []string
	for _, d := range deprecatedAnnotations {
		if _, ok := annotations[d.key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", annotationsPath.Key(d.key), d.message))
		}
	}
	return warnings
}

// duplicateWarnings warn of repeated host alias IPs and image pull secrets (the kubelet uses
// the first and ignores the rest) and of unnamed pull secrets.
func duplicateWarnings(spec *corev1.PodSpec, specPath *field.Path) []string {
	var warnings []string
	ips := sets.New[string]()
	for i, a := range spec.HostAliases {
		if ips.Has(a.IP) {
			warnings = append(warnings, fmt.Sprintf("%s: duplicate ip %q", specPath.Child("hostAliases").Index(i).Child("ip"), a.IP))
		}
		ips.Insert(a.IP)
	}
	secretsPath := specPath.Child("imagePullSecrets")
	names := sets.New[string]()
	for i, s := range spec.ImagePullSecrets {
		if names.Has(s.Name) {
			warnings = append(warnings, fmt.Sprintf("%s: duplicate name %q", secretsPath.Index(i).Child("name"), s.Name))
		}
		names.Insert(s.Name)
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			warnings = append(warnings, fmt.Sprintf("%s: invalid empty name %q", secretsPath.Index(i).Child("name"), s.Name))
		}
	}
	return warnings
}

// fractionalBytes warns of a byte count (memory, storage) with a fractional part: the API
// keeps milli precision, but a fraction of a byte means nothing.
func fractionalBytes(list corev1.ResourceList, name corev1.ResourceName, listPath *field.Path) []string {
	if v, ok := list[name]; ok && v.MilliValue()%1000 != 0 {
		return []string{fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", listPath.Key(string(name)), v.String())}
	}
	return nil
}

// containerWarnings are each container's: seccomp (and, for a template, AppArmor)
// annotations without the field that replaced them, fractional byte values, and
// environment variables that hide an earlier one.
func containerWarnings(path *field.Path, annotations map[string]string, spec *corev1.PodSpec, template bool) []string {
	var warnings []string
	annotationsPath := path.Child("metadata", "annotations")
	if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil {
		if _, ok := annotations[corev1.SeccompPodAnnotationKey]; ok {
			warnings = append(warnings, fmt.Sprintf(`%s: non-functional in v1.27+; use the "seccompProfile" field instead`, annotationsPath.Key(corev1.SeccompPodAnnotationKey)))
		}
	}
	var podAppArmor *corev1.AppArmorProfile
	if spec.SecurityContext != nil {
		podAppArmor = spec.SecurityContext.AppArmorProfile
	}
	visitContainersWithPath(spec, path.Child("spec"), func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil {
			key := corev1.SeccompContainerAnnotationKeyPrefix + c.Name
			if _, ok := annotations[key]; ok {
				warnings = append(warnings, fmt.Sprintf(`%s: non-functional in v1.27+; use the "seccompProfile" field instead`, annotationsPath.Key(key)))
			}
		}
		if template && (c.SecurityContext == nil || c.SecurityContext.AppArmorProfile == nil) {
			key := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.Name
			// An annotation that says what the pod's profile says is merely redundant.
			if v, ok := annotations[key]; ok && (podAppArmor == nil || !apiequality.Semantic.DeepEqual(podAppArmor, appArmorProfileOf(v))) {
				warnings = append(warnings, fmt.Sprintf(`%s: deprecated since v1.30; use the "appArmorProfile" field instead`, annotationsPath.Key(key)))
			}
		}
		limits, requests := p.Child("resources", "limits"), p.Child("resources", "requests")
		warnings = append(warnings, fractionalBytes(c.Resources.Limits, corev1.ResourceMemory, limits)...)
		warnings = append(warnings, fractionalBytes(c.Resources.Requests, corev1.ResourceMemory, requests)...)
		warnings = append(warnings, fractionalBytes(c.Resources.Limits, corev1.ResourceEphemeralStorage, limits)...)
		warnings = append(warnings, fractionalBytes(c.Resources.Requests, corev1.ResourceEphemeralStorage, requests)...)
		warnings = append(warnings, envWarnings(c.Env, p.Child("env"))...)
	})
	return warnings
}

// appArmorProfileOf is the profile field a deprecated AppArmor annotation value stands for,
// nil for a value that stands for none.
func appArmorProfileOf(annotation string) *corev1.AppArmorProfile {
	switch {
	case annotation == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case annotation == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case strings.HasPrefix(annotation, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		if name := strings.TrimPrefix(annotation, corev1.DeprecatedAppArmorBetaProfileNamePrefix); name != "" {
			return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	return nil
}

// envWarnings warn of a variable defined again in a way that drops the earlier definition
// (apply keeps one entry per name): from a source, or with a value that does not refer to
// the earlier one. X=$(X)... extends it, but X=$(X) alone only repeats it.
func envWarnings(env []corev1.EnvVar, envPath *field.Path) []string {
	var warnings []string
	seen := sets.New[string]()
	for i, e := range env {
		if !seen.Has(e.Name) {
			seen.Insert(e.Name)
			continue
		}
		ref := "$(" + e.Name + ")"
		if e.ValueFrom != nil || e.Value == ref || !strings.Contains(e.Value, ref) {
			warnings = append(warnings, fmt.Sprintf("%s: hides previous definition of %q, which may be dropped when using apply", envPath.Index(i), e.Name))
		}
	}
	return warnings
}

// portWarnings warn of a hostIP without a hostPort (ignored), of ports of all the containers
// that clash or overlap, and of port names used twice (services and probes find the first).
func portWarnings(spec *corev1.PodSpec, specPath *field.Path) []string {
	type seenPort struct {
		path *field.Path
		port corev1.ContainerPort
	}
	var warnings []string
	byNumber := map[string][]seenPort{}
	visitContainersWithPath(spec, specPath, func(c *corev1.Container, p *field.Path) {
		for i, port := range c.Ports {
			portPath := p.Child("ports").Index(i)
			if port.HostIP != "" && port.HostPort == 0 {
				warnings = append(warnings, fmt.Sprintf("%s: hostIP set without hostPort: %+v", portPath, port))
			}
			k := fmt.Sprintf("%d/%s", port.ContainerPort, port.Protocol)
			for _, other := range byNumber[k] {
				o := other.port
				switch {
				case port.HostIP == o.HostIP && port.HostPort == o.HostPort:
					warnings = append(warnings, fmt.Sprintf("%s: duplicate port definition with %s", portPath, other.path))
				case port.HostPort == 0 || o.HostPort == 0:
					// Redundant with the other rather than dangerous.
					warnings = append(warnings, fmt.Sprintf("%s: overlapping port definition with %s", portPath, other.path))
				case port.HostPort == o.HostPort && (port.HostIP == "") != (o.HostIP == ""):
					// One on every address and one on a single address: which one wins is
					// up to the runtime.
					warnings = append(warnings, fmt.Sprintf("%s: dangerously ambiguous port definition with %s", portPath, other.path))
				}
			}
			byNumber[k] = append(byNumber[k], seenPort{portPath, port})
		}
	})
	byName := map[string]*field.Path{}
	visitContainersWithPath(spec, specPath, func(c *corev1.Container, p *field.Path) {
		for i, port := range c.Ports {
			if port.Name == "" {
				continue
			}
			portPath := p.Child("ports").Index(i)
			if other, ok := byName[port.Name]; ok {
				warnings = append(warnings, fmt.Sprintf("%s: duplicate port name %q with %s, services and probes that select ports by name will use %s", portPath, port.Name, other, other))
				continue
			}
			byName[port.Name] = portPath
		}
	})
	return warnings
}

func podAffinityWarnings(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, p *field.Path) []string {
	var warnings []string
	for i, t := range required {
		if t.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: %s", p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i).Child("labelSelector"), nullSelectorMessage))
		}
	}
	for i, t := range preferred {
		if t.PodAffinityTerm.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: %s", p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm", "labelSelector"), nullSelectorMessage))
		}
	}
	return warnings
}
