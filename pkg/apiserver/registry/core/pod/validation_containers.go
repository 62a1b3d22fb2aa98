package pod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// containerContext is what container validation needs to know of the pod.
type containerContext struct {
	volumes       map[string]corev1.VolumeSource // the pod's valid volumes
	claimNames    sets.Set[string]               // spec.resourceClaims names
	gracePeriod   *int64                         // spec.terminationGracePeriodSeconds
	os            *corev1.PodOS
	restartPolicy corev1.RestartPolicy
	hostUsers     bool
}

func validateContainers(containers []corev1.Container, ctx *containerContext, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c, p := &containers[i], fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, ctx, p)...)
		// Clashes with init and ephemeral containers are reported there.
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		errs = append(errs, validateProbesAndLifecycle(c, ctx, p)...)
		errs = append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
	}
	// All regular containers run at once, so their host ports must differ.
	return append(errs, validateUniqueHostPorts(containers, fldPath)...)
}

func validateInitContainers(inits, regular []corev1.Container, ctx *containerContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range inits {
		c, p := &inits[i], fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, ctx, p)...)
		errs = append(errs, validateInitContainerRestartPolicy(c, p)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		// Init containers run one at a time, so each only checks itself.
		errs = append(errs, validateUniqueHostPorts(inits[i:i+1], fldPath)...)

		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if sidecar {
			errs = append(errs, validateProbesAndLifecycle(c, ctx, p)...)
		} else {
			const msg = "may not be set for init containers without restartPolicy=Always"
			for _, f := range []struct {
				name string
				set  bool
			}{
				{"lifecycle", c.Lifecycle != nil},
				{"livenessProbe", c.LivenessProbe != nil},
				{"readinessProbe", c.ReadinessProbe != nil},
				{"startupProbe", c.StartupProbe != nil},
			} {
				if f.set {
					errs = append(errs, field.Forbidden(p.Child(f.name), msg))
				}
			}
			// Run-to-completion containers are never restarted in place.
			for j, rp := range c.ResizePolicy {
				if rp.RestartPolicy == corev1.RestartContainer {
					errs = append(errs, field.Invalid(p.Child("resizePolicy").Index(j).Child("restartPolicy"), rp.RestartPolicy,
						"must not be set to 'RestartContainer' for non-sidecar initContainers"))
				}
			}
		}
	}
	return errs
}

// validateInitContainerRestartPolicy: an init container's restartPolicy is
// Always for sidecars, or Never/OnFailure with restart rules.
func validateInitContainerRestartPolicy(c *corev1.Container, fldPath *field.Path) field.ErrorList {
	if c.RestartPolicy == nil {
		if len(c.RestartPolicyRules) > 0 {
			return field.ErrorList{field.Required(fldPath.Child("restartPolicy"), "must specify restartPolicy when restart rules are used")}
		}
		return nil
	}
	return validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, fldPath)
}

// Limits on container restart rules.
const (
	maxRestartRules         = 20
	maxRestartRuleExitCodes = 255
)

func validateContainerRestartPolicy(policy *corev1.ContainerRestartPolicy, rules []corev1.ContainerRestartRule, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	policyPath, rulesPath := fldPath.Child("restartPolicy"), fldPath.Child("restartPolicyRules")
	switch {
	case policy == nil && len(rules) == 0:
		return nil
	case policy == nil:
		errs = append(errs, field.Required(policyPath, "must specify restartPolicy when restart rules are used"))
	case *policy != corev1.ContainerRestartPolicyAlways && *policy != corev1.ContainerRestartPolicyNever && *policy != corev1.ContainerRestartPolicyOnFailure:
		errs = append(errs, field.NotSupported(policyPath, *policy, []corev1.ContainerRestartPolicy{
			corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure}))
	}
	if len(rules) > maxRestartRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxRestartRules))
	}
	for i, rule := range rules {
		p := rulesPath.Index(i)
		if rule.Action != corev1.ContainerRestartRuleActionRestart && rule.Action != corev1.ContainerRestartRuleActionRestartAllContainers {
			errs = append(errs, field.NotSupported(p.Child("action"), rule.Action, []corev1.ContainerRestartRuleAction{
				corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers}))
		}
		if rule.ExitCodes == nil {
			errs = append(errs, field.Required(p.Child("exitCodes"), "must be specified"))
			continue
		}
		if op := rule.ExitCodes.Operator; op != corev1.ContainerRestartRuleOnExitCodesOpIn && op != corev1.ContainerRestartRuleOnExitCodesOpNotIn {
			errs = append(errs, field.NotSupported(p.Child("exitCodes", "operator"), op, []corev1.ContainerRestartRuleOnExitCodesOperator{
				corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn}))
		}
		if n := len(rule.ExitCodes.Values); n > maxRestartRuleExitCodes {
			errs = append(errs, field.TooMany(p.Child("exitCodes", "values"), n, maxRestartRuleExitCodes))
		}
	}
	return errs
}

// validateEphemeralContainers: debugging containers added to a running pod
// get the common checks, a pod-wide unique name, and none of the fields that
// would make the pod depend on them (ports, probes, resources, lifecycle...).
func validateEphemeralContainers(ephemeral []corev1.EphemeralContainer, regular, inits []corev1.Container, ctx *containerContext, fldPath *field.Path) field.ErrorList {
	if len(ephemeral) == 0 {
		return nil
	}
	targets, names := sets.New[string](), sets.New[string]()
	for _, list := range [][]corev1.Container{regular, inits} {
		for _, c := range list {
			targets.Insert(c.Name)
			names.Insert(c.Name)
		}
	}
	var errs field.ErrorList
	for i := range ephemeral {
		ec, p := &ephemeral[i], fldPath.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(c, ctx, p)...)
		if strings.TrimSpace(c.Image) != c.Image {
			errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
		if names.Has(ec.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		}
		names.Insert(ec.Name)
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		const msg = "cannot be set for an Ephemeral Container"
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", c.Ports != nil},
			{"resources", c.Resources.Limits != nil || c.Resources.Requests != nil || c.Resources.Claims != nil},
			{"resizePolicy", c.ResizePolicy != nil},
			{"restartPolicy", c.RestartPolicy != nil},
			{"restartPolicyRules", c.RestartPolicyRules != nil},
			{"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"startupProbe", c.StartupProbe != nil},
			{"lifecycle", c.Lifecycle != nil},
		} {
			if f.set {
				errs = append(errs, field.Forbidden(p.Child(f.name), msg))
			}
		}
		// Subpaths are bind mounts that outlive the container until the pod exits.
		for j, m := range c.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), msg))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), msg))
			}
		}
	}
	return errs
}

// validateContainerCommon holds the checks shared by all container kinds.
func validateContainerCommon(c *corev1.Container, ctx *containerContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else {
		errs = append(errs, dns1123Label(c.Name, fldPath.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(fldPath.Child("image"), ""))
	}
	errs = append(errs, validateEnum(c.TerminationMessagePolicy, fldPath.Child("terminationMessagePolicy"),
		corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
	errs = append(errs, validateContainerPorts(c.Ports, fldPath.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, fldPath.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, fldPath.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c, ctx.volumes, fldPath.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c, ctx.volumes, fldPath.Child("volumeDevices"))...)
	errs = append(errs, validateEnum(c.ImagePullPolicy, fldPath.Child("imagePullPolicy"),
		corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	errs = append(errs, validateResourceRequirements(&c.Resources, containerResourceName, ctx.claimNames, fldPath.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, ctx.restartPolicy, fldPath.Child("resizePolicy"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, ctx.hostUsers, fldPath.Child("securityContext"))...)
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, invalidAll(p.Child("name"), port.Name, msgs)...)
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			errs = append(errs, invalidAll(p.Child("containerPort"), port.ContainerPort, validation.IsValidPortNum(int(port.ContainerPort)))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, invalidAll(p.Child("hostPort"), port.HostPort, validation.IsValidPortNum(int(port.HostPort)))...)
		}
		errs = append(errs, validateEnum(port.Protocol, p.Child("protocol"), corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)...)
	}
	return errs
}

// validateUniqueHostPorts rejects two ports asking for the same
// protocol/hostIP/hostPort among containers that run together.
func validateUniqueHostPorts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(fldPath.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

// Downward API field paths an env var may read.
var envFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

// Container resources the downward API exposes (plus hugepages by prefix).
var resourceFieldPaths = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage")

func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			// Any printable ASCII but '=' (RelaxedEnvironmentVariableValidation, GA).
			errs = append(errs, invalidAll(p.Child("name"), ev.Name, validation.IsRelaxedEnvVarName(ev.Name))...)
		}
		errs = append(errs, validateEnvVarSource(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarSource(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	sources := 0
	if from.FieldRef != nil {
		sources++
		errs = append(errs, validateObjectFieldSelector(from.FieldRef, envFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateResourceFieldSelector(from.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if ref := from.FileKeyRef; ref != nil {
		sources++
		p := fldPath.Child("fileKeyRef")
		if ref.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		} else {
			errs = append(errs, invalidAll(p.Child("key"), ref.Key, validation.IsRelaxedEnvVarName(ref.Key))...)
		}
		if ref.VolumeName == "" {
			errs = append(errs, field.Required(p.Child("volumeName"), ""))
		} else {
			errs = append(errs, dns1123Label(ref.VolumeName, p.Child("volumeName"))...)
		}
		if ref.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else {
			errs = append(errs, validatePathNoBacksteps(ref.Path, p.Child("path"))...)
		}
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateKeySelector checks a configMapKeyRef or secretKeyRef.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	errs := dns1123SubdomainName(name, fldPath.Child("name"))
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		errs = append(errs, invalidAll(fldPath.Child("key"), key, validation.IsConfigMapKey(key))...)
	}
	return errs
}

// validateObjectFieldSelector checks a downward API fieldRef against the
// field paths allowed where it is used; labels and annotations may be
// subscripted (metadata.labels['key']).
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, allowed sets.Set[string], fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	path := fs.FieldPath
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), path, fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	if path == "spec.host" {
		path = "spec.nodeName" // old v1 clients' name for it
	}
	if base, key, ok := splitSubscriptedPath(path); ok {
		switch base {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(key), fldPath)
		case "metadata.labels":
			return qualifiedName(key, fldPath)
		}
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: field label does not support subscript: %s", fs.FieldPath))}
	}
	if !downwardAPIFieldLabels.Has(path) {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: field label not supported: %s", fs.FieldPath))}
	}
	if !allowed.Has(path) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), path, sets.List(allowed))}
	}
	return nil
}

// downwardAPIFieldLabels are the pod fields the v1 downward API knows at all.
var downwardAPIFieldLabels = sets.New("metadata.annotations", "metadata.labels", "metadata.name",
	"metadata.namespace", "metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName",
	"spec.schedulerName", "status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

// splitSubscriptedPath splits "metadata.labels['key']".
func splitSubscriptedPath(path string) (base, key string, ok bool) {
	if !strings.HasSuffix(path, "']") {
		return path, "", false
	}
	base, key, ok = strings.Cut(strings.TrimSuffix(path, "']"), "['")
	if !ok || base == "" {
		return path, "", false
	}
	return base, key, true
}

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, inVolume bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	hugePages := strings.HasPrefix(fs.Resource, "requests.hugepages-") || strings.HasPrefix(fs.Resource, "limits.hugepages-")
	switch {
	case inVolume && fs.ContainerName == "":
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	case !resourceFieldPaths.Has(fs.Resource) && !hugePages:
		errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(resourceFieldPaths)))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	divisor := fs.Divisor.String()
	const sizes = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
	bad := func(what string) {
		errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, fmt.Sprintf("only divisor's values %s are supported with the %s resource", sizes, what)))
	}
	switch fs.Resource {
	case "limits.cpu", "requests.cpu":
		if divisor != "1m" && divisor != "1" {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !byteDivisors.Has(divisor) {
			bad("memory")
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !byteDivisors.Has(divisor) {
			bad("local ephemeral storage")
		}
	}
	if hugePages && !byteDivisors.Has(divisor) {
		bad("hugepages")
	}
	return errs
}

var byteDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, src := range sources {
		p := fldPath.Index(i)
		if src.Prefix != "" {
			errs = append(errs, invalidAll(p.Child("prefix"), src.Prefix, validation.IsRelaxedEnvVarName(src.Prefix))...)
		}
		n := 0
		if src.ConfigMapRef != nil {
			n++
			errs = append(errs, requiredName(src.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
		}
		if src.SecretRef != nil {
			n++
			errs = append(errs, requiredName(src.SecretRef.Name, p.Child("secretRef", "name"))...)
		}
		// Upstream reports these on the list, not the item.
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// requiredName checks the name of a referenced ConfigMap or Secret. As
// upstream, it is checked as a name prefix: a trailing '-' is accepted.
func requiredName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return invalidAll(fldPath, name, apivalidation.NameIsDNSSubdomain(name, true))
}

// dns1123SubdomainName is the object-name rule (NameIsDNSSubdomain).
func dns1123SubdomainName(name string, fldPath *field.Path) field.ErrorList {
	return invalidAll(fldPath, name, validation.IsDNS1123Subdomain(name))
}

// validateProbesAndLifecycle covers what regular and sidecar containers may
// have and run-to-completion init containers may not.
func validateProbesAndLifecycle(c *corev1.Container, ctx *containerContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Lifecycle != nil {
		errs = append(errs, validateLifecycle(c.Lifecycle, ctx, fldPath.Child("lifecycle"))...)
	}
	if p := c.LivenessProbe; p != nil {
		errs = append(errs, validateProbe(p, ctx.gracePeriod, fldPath.Child("livenessProbe"))...)
		if p.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(fldPath.Child("livenessProbe", "successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	if p := c.ReadinessProbe; p != nil {
		errs = append(errs, validateProbe(p, ctx.gracePeriod, fldPath.Child("readinessProbe"))...)
		if p.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(fldPath.Child("readinessProbe", "terminationGracePeriodSeconds"), p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if p := c.StartupProbe; p != nil {
		errs = append(errs, validateProbe(p, ctx.gracePeriod, fldPath.Child("startupProbe"))...)
		if p.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(fldPath.Child("startupProbe", "successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

func validateProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	h := handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}
	errs := validateHandler(h, gracePeriod, fldPath)
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds},
		{"timeoutSeconds", p.TimeoutSeconds},
		{"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		if f.value < 0 {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), int64(f.value), "must be greater than or equal to 0"))
		}
	}
	if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, ctx *containerContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if hook.h != nil {
			h := handler{exec: hook.h.Exec, httpGet: hook.h.HTTPGet, tcpSocket: hook.h.TCPSocket, sleep: hook.h.Sleep}
			errs = append(errs, validateHandler(h, ctx.gracePeriod, fldPath.Child(hook.name))...)
		}
	}
	if l.StopSignal != nil {
		errs = append(errs, validateStopSignal(*l.StopSignal, ctx.os, fldPath.Child("stopSignal"))...)
	}
	return errs
}

// validateStopSignal: the signal must exist on the pod's OS, which must
// therefore be stated.
func validateStopSignal(sig corev1.Signal, os *corev1.PodOS, fldPath *field.Path) field.ErrorList {
	switch {
	case os == nil:
		return field.ErrorList{field.Forbidden(fldPath, "may not be set for containers with empty `spec.os.name`")}
	case os.Name == corev1.Windows && sig != corev1.SIGKILL && sig != corev1.SIGTERM:
		return field.ErrorList{field.NotSupported(fldPath, sig, []corev1.Signal{corev1.SIGKILL, corev1.SIGTERM})}
	case os.Name == corev1.Linux && !linuxSignals.Has(sig):
		return field.ErrorList{field.NotSupported(fldPath, sig, sets.List(linuxSignals))}
	}
	return nil
}

var linuxSignals = func() sets.Set[corev1.Signal] {
	s := sets.New[corev1.Signal]("SIGABRT", "SIGALRM", "SIGBUS", "SIGCHLD", "SIGCLD", "SIGCONT", "SIGFPE", "SIGHUP",
		"SIGILL", "SIGINT", "SIGIO", "SIGIOT", "SIGKILL", "SIGPIPE", "SIGPOLL", "SIGPROF", "SIGPWR", "SIGQUIT",
		"SIGSEGV", "SIGSTKFLT", "SIGSTOP", "SIGSYS", "SIGTERM", "SIGTRAP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG",
		"SIGUSR1", "SIGUSR2", "SIGVTALRM", "SIGWINCH", "SIGXCPU", "SIGXFSZ", "SIGRTMIN", "SIGRTMAX")
	for i := 1; i <= 15; i++ {
		s.Insert(corev1.Signal(fmt.Sprintf("SIGRTMIN+%d", i)), corev1.Signal(fmt.Sprintf("SIGRTMAX-%d", i)))
	}
	return s
}()

// handler is the union of probe and lifecycle handlers: exactly one is set.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	// Only the first handler set is validated; each further one is an error.
	one := func(present bool, name string, validate func(*field.Path) field.ErrorList) {
		switch {
		case !present:
		case set > 0:
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
		default:
			set++
			errs = append(errs, validate(fldPath.Child(name))...)
		}
	}
	one(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGet(h.httpGet, p) })
	one(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList { return validatePortNumOrName(h.tcpSocket.Port, p.Child("port")) })
	one(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		errs := validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
		if m := h.grpc.Mode; m != nil && *m != corev1.GRPCProbeModePlaintext && *m != corev1.GRPCProbeModeTLS {
			errs = append(errs, field.NotSupported(p.Child("mode"), *m, []corev1.GRPCProbeMode{corev1.GRPCProbeModePlaintext, corev1.GRPCProbeModeTLS}))
		}
		return errs
	})
	one(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		// No grace period means the pod has that error already.
		if gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
		}
		return nil
	})
	if set == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	if h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for _, header := range h.HTTPHeaders {
		errs = append(errs, invalidAll(fldPath.Child("httpHeaders"), header.Name, validation.IsHTTPHeaderName(header.Name))...)
	}
	if proto := h.Protocol; proto != nil {
		switch {
		case *proto != corev1.HTTPProtocolHTTP1 && *proto != corev1.HTTPProtocolHTTP2:
			errs = append(errs, field.NotSupported(fldPath.Child("protocol"), *proto, []corev1.HTTPProtocol{corev1.HTTPProtocolHTTP1, corev1.HTTPProtocolHTTP2}))
		case *proto == corev1.HTTPProtocolHTTP2 && h.Scheme != corev1.URISchemeHTTP:
			errs = append(errs, field.Invalid(fldPath.Child("protocol"), *proto, "is only supported with HTTP (H2C)"))
		case *proto == corev1.HTTPProtocolHTTP2 && h.Host != "":
			errs = append(errs, field.Invalid(fldPath.Child("host"), h.Host, "must be empty when `protocol` is \"HTTP2\""))
		}
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		return invalidAll(fldPath, port.StrVal, validation.IsValidPortName(port.StrVal))
	}
	return invalidAll(fldPath, port.IntValue(), validation.IsValidPortNum(port.IntValue()))
}

// validateSecurityContext checks a container's securityContext. Privileged
// containers are allowed (kube-apiserver --allow-privileged=true).
func validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, invalidAll(fldPath.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, invalidAll(fldPath.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if pm := sc.ProcMount; pm != nil {
		if *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
			errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		// An unmasked /proc is only safe inside a user namespace.
		if hostUsers && *pm == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(fldPath.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
}
