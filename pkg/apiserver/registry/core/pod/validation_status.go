package pod

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// This file validates the subresources the scheduler and node agent write:
// pods/status and pods/binding.

// ValidatePodStatusUpdate validates a write to pods/status: metadata may
// change only as on any update, the spec's nodeName not at all, and the status
// must be well formed (conditions, IPs, nominated node, container states that
// the restart policy allows).
func ValidatePodStatusUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath, statusPath := field.NewPath("metadata"), field.NewPath("status")
	errs := validateMetaUpdate(newPod, oldPod, metaPath)
	errs = append(errs, validatePodAnnotations(newPod.Annotations, &newPod.Spec, metaPath.Child("annotations"))...)

	status, oldStatus := &newPod.Status, &oldPod.Status
	errs = append(errs, validatePodConditions(status.Conditions, statusPath.Child("conditions"))...)
	if newPod.Spec.NodeName != oldPod.Spec.NodeName {
		errs = append(errs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if nominated := status.NominatedNodeName; nominated != "" && nominated != oldStatus.NominatedNodeName {
		errs = append(errs, invalidAll(statusPath.Child("nominatedNodeName"), nominated, apivalidation.NameIsDNSSubdomain(nominated, false))...)
		if oldPod.Spec.NodeName != "" {
			errs = append(errs, field.Forbidden(statusPath.Child("nominatedNodeName"), "may not be set on pods that are already bound to a node"))
		}
	}
	if status.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("observedGeneration"), status.ObservedGeneration, "must be a non-negative integer"))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(status.QOSClass, oldStatus.QOSClass, statusPath.Child("qosClass"))...)

	// Statuses are not checked against the spec's container names: upstream
	// never did, and clients must already cope with whatever is reported.
	spec := &oldPod.Spec
	restartable := func(containers []corev1.Container) func(string, int32) bool {
		return func(name string, exitCode int32) bool {
			if anyRestartsAllContainers(spec) {
				return true
			}
			for i := range containers {
				if containers[i].Name == name {
					return mayRestart(&containers[i], spec, exitCode)
				}
			}
			return false
		}
	}
	neverRestarts := func(string, int32) bool { return false }
	errs = append(errs, validateStateTransitions(status.ContainerStatuses, oldStatus.ContainerStatuses, statusPath.Child("containerStatuses"), restartable(spec.Containers))...)
	errs = append(errs, validateStateTransitions(status.InitContainerStatuses, oldStatus.InitContainerStatuses, statusPath.Child("initContainerStatuses"), restartable(spec.InitContainers))...)
	errs = append(errs, validateStateTransitions(status.EphemeralContainerStatuses, oldStatus.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"), neverRestarts)...)

	errs = append(errs, validateContainerStatusUsers(status.ContainerStatuses, newPod.Spec.OS, statusPath.Child("containerStatuses"))...)
	errs = append(errs, validateContainerStatusUsers(status.InitContainerStatuses, newPod.Spec.OS, statusPath.Child("initContainerStatuses"))...)
	errs = append(errs, validateContainerStatusUsers(status.EphemeralContainerStatuses, newPod.Spec.OS, statusPath.Child("ephemeralContainerStatuses"))...)
	errs = append(errs, validateStatusIPs(status.PodIPs, oldStatus.PodIPs, statusPath.Child("podIPs"))...)
	switch hasIP, hasIPs := status.PodIP != "", len(status.PodIPs) > 0; {
	case hasIP != hasIPs:
		errs = append(errs, field.Invalid(statusPath.Child("podIPs"), status.PodIPs, "podIP and podIPs must either both be set or both be unset"))
	case hasIPs && status.PodIP != status.PodIPs[0].IP:
		errs = append(errs, field.Invalid(statusPath.Child("podIPs").Index(0).Child("ip"), status.PodIPs[0].IP, "must be equal to `podIP`"))
	}
	if len(status.HostIPs) > 0 {
		hostIPs := make([]corev1.PodIP, len(status.HostIPs))
		for i, ip := range status.HostIPs {
			hostIPs[i] = corev1.PodIP(ip)
		}
		oldHostIPs := make([]corev1.PodIP, len(oldStatus.HostIPs))
		for i, ip := range oldStatus.HostIPs {
			oldHostIPs[i] = corev1.PodIP(ip)
		}
		if status.HostIP != status.HostIPs[0].IP {
			errs = append(errs, field.Invalid(statusPath.Child("hostIPs").Index(0).Child("ip"), status.HostIPs[0].IP, "must be equal to `hostIP`"))
		}
		errs = append(errs, validateStatusIPs(hostIPs, oldHostIPs, statusPath.Child("hostIPs"))...)
	}
	return errs
}

// validatePodConditions requires custom condition types to be qualified
// names; the built-in ones need no check.
func validatePodConditions(conditions []corev1.PodCondition, fldPath *field.Path) field.ErrorList {
	builtin := sets.New(corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized)
	var errs field.ErrorList
	for i, c := range conditions {
		if c.ObservedGeneration < 0 {
			errs = append(errs, field.Invalid(fldPath.Index(i).Child("observedGeneration"), c.ObservedGeneration, "must be a non-negative integer"))
		}
		if !builtin.Has(c.Type) {
			errs = append(errs, qualifiedName(string(c.Type), fldPath.Index(i).Child("Type"))...)
		}
	}
	return errs
}

// validateStateTransitions forbids a terminated container from running again
// unless mayRestart says its restart policy (and rules) allow it.
func validateStateTransitions(newStatuses, oldStatuses []corev1.ContainerStatus, fldPath *field.Path, mayRestart func(name string, exitCode int32) bool) field.ErrorList {
	var errs field.ErrorList
	for i, old := range oldStatuses {
		if old.State.Terminated == nil {
			continue
		}
		for _, cur := range newStatuses {
			if cur.Name != old.Name || cur.State.Terminated != nil {
				continue
			}
			if !mayRestart(old.Name, old.State.Terminated.ExitCode) {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
			break
		}
	}
	return errs
}

// anyRestartsAllContainers reports whether some container's restart rules
// can restart the whole pod, which lets every container run again.
func anyRestartsAllContainers(spec *corev1.PodSpec) bool {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			for _, rule := range c.RestartPolicyRules {
				if rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// mayRestart reports whether container c, which exited with exitCode, may be
// started again: its first matching restart rule, else its own restart
// policy, else the pod's.
func mayRestart(c *corev1.Container, spec *corev1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		for _, rule := range c.RestartPolicyRules {
			if rule.ExitCodes != nil && exitCodeMatches(rule.ExitCodes, exitCode) {
				if rule.Action == corev1.ContainerRestartRuleActionRestart || rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
				break
			}
		}
		switch *c.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

func exitCodeMatches(req *corev1.ContainerRestartRuleOnExitCodes, code int32) bool {
	in := false
	for _, v := range req.Values {
		in = in || v == code
	}
	switch req.Operator {
	case corev1.ContainerRestartRuleOnExitCodesOpIn:
		return in
	case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
		return !in
	}
	return false
}

// validateContainerStatusUsers checks the identities the runtime reports a
// container runs as: Linux ones only on Linux pods, with any uid_t as UID.
func validateContainerStatusUsers(statuses []corev1.ContainerStatus, os *corev1.PodOS, fldPath *field.Path) field.ErrorList {
	windows := os != nil && os.Name == corev1.Windows
	linux := os == nil || os.Name == corev1.Linux
	var errs field.ErrorList
	for i, s := range statuses {
		if s.User == nil || s.User.Linux == nil {
			continue
		}
		p := fldPath.Index(i).Child("user", "linux")
		u := s.User.Linux
		switch {
		case windows:
			errs = append(errs, field.Forbidden(p, "cannot be set for a windows pod"))
		case linux:
			if u.UID < 0 || u.UID > math.MaxUint32 {
				errs = append(errs, field.Invalid(p.Child("uid"), u.UID, fmt.Sprintf("must be between 0 and %d, inclusive", int64(math.MaxUint32))))
			}
			errs = append(errs, invalidAll(p.Child("gid"), u.GID, validation.IsValidGroupID(u.GID))...)
			for g, gid := range u.SupplementalGroups {
				errs = append(errs, invalidAll(p.Child("supplementalGroups").Index(g), gid, validation.IsValidGroupID(gid))...)
			}
		}
	}
	return errs
}

// validateStatusIPs checks pod or host IPs: valid addresses (an invalid one
// already stored may stay) and at most one per IP family.
func validateStatusIPs(ips, oldIPs []corev1.PodIP, fldPath *field.Path) field.ErrorList {
	old := make([]string, len(oldIPs))
	for i, ip := range oldIPs {
		old[i] = ip.IP
	}
	var errs field.ErrorList
	values := make([]string, len(ips))
	for i, ip := range ips {
		errs = append(errs, validation.IsValidIPForLegacyField(fldPath.Index(i), ip.IP, true, old)...)
		values[i] = ip.IP
	}
	if len(ips) > 1 {
		dualStack, err := netutils.IsDualStackIPStrings(values)
		if err != nil {
			errs = append(errs, field.InternalError(fldPath, fmt.Errorf("failed to check for dual stack with error:%w", err)))
		}
		if !dualStack || len(ips) > 2 {
			errs = append(errs, field.Invalid(fldPath, ips, "may specify no more than one IP for each IP family"))
		}
	}
	return errs
}

// ValidateBinding validates a pods/binding request body: it must name the
// node (the only kind a pod can be bound to) by a valid node name.
func ValidateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	kindPath, namePath := field.NewPath("target", "kind"), field.NewPath("target", "name")
	toNode := b.Target.Kind == "" || b.Target.Kind == "Node"
	if !toNode {
		errs = append(errs, field.NotSupported(kindPath, b.Target.Kind, []string{"Node", "<empty>"}))
	}
	switch {
	case b.Target.Name == "":
		errs = append(errs, field.Required(namePath, ""))
	case toNode:
		errs = append(errs, invalidAll(namePath, b.Target.Name, apivalidation.NameIsDNSSubdomain(b.Target.Name, false))...)
	}
	return errs
}
