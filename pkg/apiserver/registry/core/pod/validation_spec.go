package pod

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/node/util/sysctl"
)

// validatePodSpec validates a pod's spec (upstream's ValidatePodSpec).
func validatePodSpec(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}

	vols, volErrs := validateVolumes(spec.Volumes, meta, fldPath.Child("volumes"))
	errs = append(errs, volErrs...)
	claimNames, claimErrs := validatePodResourceClaims(spec.ResourceClaims, meta, fldPath.Child("resourceClaims"))
	errs = append(errs, claimErrs...)
	ctx := &containerContext{
		volumes:       vols,
		claimNames:    claimNames,
		gracePeriod:   spec.TerminationGracePeriodSeconds,
		os:            spec.OS,
		restartPolicy: spec.RestartPolicy,
		hostUsers:     spec.HostUsers == nil || *spec.HostUsers,
	}
	errs = append(errs, validateContainers(spec.Containers, ctx, fldPath.Child("containers"))...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, ctx, fldPath.Child("initContainers"))...)
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, ctx, fldPath.Child("ephemeralContainers"))...)
	errs = append(errs, validatePodResources(spec, claimNames, fldPath)...)
	errs = append(errs, validateHostNetworkPorts(spec, fldPath)...)

	errs = append(errs, validateEnum(spec.RestartPolicy, fldPath.Child("restartPolicy"),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	errs = append(errs, validateEnum(spec.DNSPolicy, fldPath.Child("dnsPolicy"),
		corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone)...)
	errs = append(errs, metavalidation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(fldPath.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, gate := range spec.ReadinessGates {
		errs = append(errs, qualifiedName(string(gate.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	errs = append(errs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateHostUsers(spec, fldPath)...)
	errs = append(errs, validateHostnameOverride(spec, fldPath)...)

	if spec.ServiceAccountName != "" {
		errs = append(errs, invalidAll(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, apivalidation.ValidateServiceAccountName(spec.ServiceAccountName, false))...)
	}
	if sa := spec.DeprecatedServiceAccount; sa != spec.ServiceAccountName { //nolint:staticcheck // must mirror serviceAccountName
		errs = append(errs, field.Invalid(fldPath.Child("deprecatedServiceAccount"), sa, fmt.Sprintf("must be the same as serviceAccountName: %q", spec.ServiceAccountName)))
	}
	if spec.NodeName != "" {
		errs = append(errs, invalidAll(fldPath.Child("nodeName"), spec.NodeName, apivalidation.NameIsDNSSubdomain(spec.NodeName, false))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		errs = append(errs, dns1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, dns1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, alias := range spec.HostAliases {
		aliasPath := fldPath.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIPForLegacyField(aliasPath.Child("ip"), alias.IP, true, nil)...)
		for j, hostname := range alias.Hostnames {
			errs = append(errs, dns1123Subdomain(hostname, aliasPath.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, invalidAll(fldPath.Child("priorityClassName"), spec.PriorityClassName, apivalidation.NameIsDNSSubdomain(spec.PriorityClassName, false))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, invalidAll(fldPath.Child("runtimeClassName"), *spec.RuntimeClassName, apivalidation.NameIsDNSSubdomain(*spec.RuntimeClassName, false))...)
	}
	if spec.PreemptionPolicy != nil {
		errs = append(errs, validateEnum(*spec.PreemptionPolicy, fldPath.Child("preemptionPolicy"), corev1.PreemptLowerPriority, corev1.PreemptNever)...)
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, containerResourceName, nil, fldPath.Child("overhead"))...)
	}
	errs = append(errs, validateOS(spec, fldPath)...)
	if g := spec.SchedulingGroup; g != nil {
		groupPath := fldPath.Child("schedulingGroup", "podGroupName")
		if g.PodGroupName == nil {
			errs = append(errs, field.Invalid(groupPath, g.PodGroupName, "must specify one of: `podGroupName`"))
		} else {
			errs = append(errs, invalidAll(groupPath, *g.PodGroupName, apivalidation.NameIsDNSSubdomain(*g.PodGroupName, false))...)
		}
	}
	errs = append(errs, validateFileKeyRefVolumes(spec, fldPath)...)
	return errs
}

// validateEnum checks a required enumerated value; the error lists the
// supported values in the order given.
func validateEnum[T ~string](value T, fldPath *field.Path, supported ...T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, s := range supported {
		if value == s {
			return nil
		}
	}
	return validateOneOf(value, fldPath, supported...)
}

// validateOneOf checks an optional enumerated value that, once set, may not
// be empty.
func validateOneOf[T ~string](value T, fldPath *field.Path, supported ...T) field.ErrorList {
	for _, s := range supported {
		if value == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, supported)}
}

// validatePodResourceClaims returns the names of the pod's resource claims,
// which containers' resources.claims may refer to.
func validatePodResourceClaims(claims []corev1.PodResourceClaim, meta *metav1.ObjectMeta, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	names := sets.New[string]()
	var errs field.ErrorList
	for _, claim := range claims {
		if claim.Name != "" {
			names.Insert(claim.Name)
		}
	}
	seen := sets.New[string]()
	for i, claim := range claims {
		if _, static := meta.Annotations[corev1.MirrorPodAnnotationKey]; static {
			errs = append(errs, field.Forbidden(field.NewPath(""), "static pods do not support resource claims"))
			continue
		}
		claimPath := fldPath.Index(i)
		switch {
		case claim.Name == "":
			errs = append(errs, field.Required(claimPath.Child("name"), ""))
		case seen.Has(claim.Name):
			errs = append(errs, field.Duplicate(claimPath.Child("name"), claim.Name))
		default:
			errs = append(errs, dns1123Label(claim.Name, claimPath.Child("name"))...)
			seen.Insert(claim.Name)
		}
		switch {
		case claim.ResourceClaimName != nil && claim.ResourceClaimTemplateName != nil:
			errs = append(errs, field.Invalid(claimPath, claim, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		case claim.ResourceClaimName == nil && claim.ResourceClaimTemplateName == nil:
			errs = append(errs, field.Invalid(claimPath, claim, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if n := claim.ResourceClaimName; n != nil {
			errs = append(errs, invalidAll(claimPath.Child("resourceClaimName"), *n, apivalidation.NameIsDNSSubdomain(*n, false))...)
		}
		if n := claim.ResourceClaimTemplateName; n != nil {
			errs = append(errs, invalidAll(claimPath.Child("resourceClaimTemplateName"), *n, apivalidation.NameIsDNSSubdomain(*n, false))...)
		}
	}
	return names, errs
}

// validateHostNetworkPorts: with host networking a container port is a node
// port, so hostPort (defaulted to containerPort) may not say otherwise.
func validateHostNetworkPorts(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if port.HostPort != port.ContainerPort {
				p := fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort")
				errs = append(errs, field.Invalid(p, port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// Limits of the resolver configuration, from libc.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validateDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIPForLegacyField(fldPath.Child("nameservers").Index(i), ns, true, nil)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range cfg.Searches {
		if search == "." {
			continue // the root domain is a valid search path
		}
		search = strings.TrimSuffix(search, ".")
		errs = append(errs, invalidAll(fldPath.Child("searches").Index(i), search, validation.IsDNS1123SubdomainWithUnderscore(search))...)
	}
	for i, opt := range cfg.Options {
		if opt.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, gate := range gates {
		errs = append(errs, qualifiedName(gate.Name, fldPath.Index(i))...)
		if seen.Has(gate.Name) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), gate.Name))
		}
		seen.Insert(gate.Name)
	}
	return errs
}

// validateHostUsers: a pod in its own user namespace may not share the
// host's PID or IPC namespace or network, nor use raw block devices.
func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fldPath.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	// Upstream's capitalised paths.
	if spec.HostPID {
		errs = append(errs, field.Forbidden(fldPath.Child("HostPID"), "when `hostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(fldPath.Child("HostIPC"), "when `hostUsers` is false"))
	}
	visitContainersWithPath(spec, fldPath, func(c *corev1.Container, p *field.Path) {
		if len(c.VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(p.Child("volumeDevices"), "when `hostUsers` is false"))
		}
	})
	return errs
}

func validateHostnameOverride(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostnameOverride == nil {
		return nil
	}
	var errs field.ErrorList
	p := fldPath.Child("hostnameOverride")
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(p, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(p, "may not be specified when hostNetwork is true"))
	}
	if len(*spec.HostnameOverride) > 64 {
		errs = append(errs, field.TooLong(p, "", 64))
	}
	return append(errs, dns1123Subdomain(*spec.HostnameOverride, p)...)
}

// validateFileKeyRefVolumes: env values read from files need the file in an
// emptyDir volume of the pod.
func validateFileKeyRefVolumes(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	sources := map[string]*corev1.VolumeSource{}
	for i := range spec.Volumes {
		sources[spec.Volumes[i].Name] = &spec.Volumes[i].VolumeSource
	}
	var errs field.ErrorList
	visitContainersWithPath(spec, fldPath, func(c *corev1.Container, p *field.Path) {
		for j, env := range c.Env {
			if env.ValueFrom == nil || env.ValueFrom.FileKeyRef == nil {
				continue
			}
			name := env.ValueFrom.FileKeyRef.VolumeName
			namePath := p.Child("env").Index(j).Child("valueFrom", "fileKeyRef", "volumeName")
			if src, ok := sources[name]; !ok {
				errs = append(errs, field.NotFound(namePath, name))
			} else if src.EmptyDir == nil {
				errs = append(errs, field.Invalid(namePath, name, "referenced volume must be of type emptyDir"))
			}
		}
	})
	return errs
}

// visitContainersWithPath visits init, regular and ephemeral containers with
// their field paths.
func visitContainersWithPath(spec *corev1.PodSpec, specPath *field.Path, visit func(c *corev1.Container, p *field.Path)) {
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i], specPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i], specPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		visit((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), specPath.Child("ephemeralContainers").Index(i))
	}
}

// Sysctl names: dot- or slash-separated segments.
const sysctlMaxLength = 253

var sysctlNameRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

func validatePodSecurityContext(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		errs = append(errs, invalidAll(fldPath.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	if sc.RunAsUser != nil {
		errs = append(errs, invalidAll(fldPath.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, invalidAll(fldPath.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	for i, gid := range sc.SupplementalGroups {
		errs = append(errs, invalidAll(fldPath.Child("supplementalGroups").Index(i), gid, validation.IsValidGroupID(gid))...)
	}
	seen := sets.New[string]()
	for i, s := range sc.Sysctls {
		namePath := fldPath.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(namePath, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRegexp.MatchString(s.Name):
			errs = append(errs, field.Invalid(namePath, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRegexp)))
		case seen.Has(s.Name):
			errs = append(errs, field.Duplicate(namePath, s.Name))
		}
		seen.Insert(s.Name)
		// A namespaced sysctl would change the host's namespace it shares.
		switch ns, _, _ := sysctl.GetNamespace(s.Name); {
		case spec.HostNetwork && ns == sysctl.NetNamespace:
			errs = append(errs, field.Invalid(namePath, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == sysctl.IPCNamespace:
			errs = append(errs, field.Invalid(namePath, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	if sc.FSGroupChangePolicy != nil {
		errs = append(errs, validateOneOf(*sc.FSGroupChangePolicy, fldPath.Child("fsGroupChangePolicy"), corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch)...)
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	if sc.SupplementalGroupsPolicy != nil {
		errs = append(errs, validateOneOf(*sc.SupplementalGroupsPolicy, fldPath.Child("supplementalGroupsPolicy"), corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict)...)
	}
	if sc.SELinuxChangePolicy != nil {
		errs = append(errs, validateOneOf(*sc.SELinuxChangePolicy, fldPath.Child("seLinuxChangePolicy"), corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive)...)
	}
	return errs
}

func validateSeccompProfile(p *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	switch p.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), p.Type, []corev1.SeccompProfileType{
			corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	switch {
	case p.Type == corev1.SeccompProfileTypeLocalhost && p.LocalhostProfile == nil:
		errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case p.Type == corev1.SeccompProfileTypeLocalhost:
		errs = append(errs, validateLocalDescendingPath(*p.LocalhostProfile, fldPath.Child("localhostProfile"))...)
	case p.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), p, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateAppArmorProfile(p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	localPath := fldPath.Child("localhostProfile")
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		switch {
		case p.LocalhostProfile == nil:
			errs = append(errs, field.Required(localPath, "must be set when AppArmor type is Localhost"))
		case strings.TrimSpace(*p.LocalhostProfile) != *p.LocalhostProfile:
			errs = append(errs, field.Invalid(localPath, *p.LocalhostProfile, "must not be padded with whitespace"))
		case *p.LocalhostProfile == "":
			errs = append(errs, field.Required(localPath, "must be set when AppArmor type is Localhost"))
		case len(*p.LocalhostProfile) > 4095: // PATH_MAX - 1
			errs = append(errs, field.TooLong(localPath, "", 4095))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(localPath, p.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), p.Type, []corev1.AppArmorProfileType{
			corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

// validateOS checks spec.os and, for a known OS, that no field of the other
// OS is set.
func validateOS(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.OS == nil {
		return nil
	}
	osPath := fldPath.Child("os")
	switch spec.OS.Name {
	case "":
		return field.ErrorList{field.Required(osPath.Child("name"), "")}
	case corev1.Linux:
		return validateLinuxOnly(spec, fldPath)
	case corev1.Windows:
		return validateWindowsOnly(spec, fldPath)
	}
	return field.ErrorList{field.NotSupported(osPath, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
}

func validateLinuxOnly(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	const msg = "windows options cannot be set for a linux pod"
	var errs field.ErrorList
	if spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("securityContext", "windowsOptions"), msg))
	}
	visitContainersWithPath(spec, fldPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(p.Child("securityContext", "windowsOptions"), msg))
		}
	})
	return errs
}

func validateWindowsOnly(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	const msg = "cannot be set for a windows pod"
	var errs field.ErrorList
	forbid := func(set bool, p *field.Path) {
		if set {
			errs = append(errs, field.Forbidden(p, msg))
		}
	}
	if sc := spec.SecurityContext; sc != nil {
		p := fldPath.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, p.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, p.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, p.Child("seccompProfile"))
		forbid(sc.FSGroup != nil, p.Child("fsGroup"))
		forbid(sc.FSGroupChangePolicy != nil, p.Child("fsGroupChangePolicy"))
		forbid(len(sc.Sysctls) > 0, p.Child("sysctls"))
		forbid(sc.RunAsUser != nil, p.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, p.Child("runAsGroup"))
		forbid(sc.SupplementalGroups != nil, p.Child("supplementalGroups"))
		forbid(sc.SupplementalGroupsPolicy != nil, p.Child("supplementalGroupsPolicy"))
		forbid(sc.SELinuxChangePolicy != nil, p.Child("seLinuxChangePolicy"))
	}
	forbid(spec.HostUsers != nil, fldPath.Child("hostUsers"))
	forbid(spec.HostPID, fldPath.Child("hostPID"))
	forbid(spec.HostIPC, fldPath.Child("hostIPC"))
	forbid(spec.ShareProcessNamespace != nil, fldPath.Child("shareProcessNamespace"))
	visitContainersWithPath(spec, fldPath, func(c *corev1.Container, cp *field.Path) {
		sc := c.SecurityContext
		if sc == nil {
			return
		}
		p := cp.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, p.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, p.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, p.Child("seccompProfile"))
		forbid(sc.Capabilities != nil, p.Child("capabilities"))
		forbid(sc.ReadOnlyRootFilesystem != nil, p.Child("readOnlyRootFilesystem"))
		forbid(sc.Privileged != nil, p.Child("privileged"))
		forbid(sc.AllowPrivilegeEscalation != nil, p.Child("allowPrivilegeEscalation"))
		forbid(sc.ProcMount != nil, p.Child("procMount"))
		forbid(sc.RunAsUser != nil, p.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, p.Child("runAsGroup"))
	})
	return errs
}
