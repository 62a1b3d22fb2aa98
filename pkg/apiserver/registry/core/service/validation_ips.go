package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// strictIPCIDRValidation is the StrictIPCIDRValidation gate, beta and on by
// default in v1.37: new IPs and CIDRs may not have leading zeros or be
// IPv4-mapped IPv6, and CIDRs may not have bits set past the prefix.
const strictIPCIDRValidation = true

var (
	supportedIPFamilies       = sets.New(corev1.IPv4Protocol, corev1.IPv6Protocol)
	supportedIPFamilyPolicies = sets.New(corev1.IPFamilyPolicySingleStack,
		corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack)
)

// ValidateServiceClusterIPsRelatedFields validates spec.clusterIP, clusterIPs,
// ipFamilies and ipFamilyPolicy on their own and against each other:
// clusterIPs[0] is clusterIP, "None" is the only value when present, at most
// one IP per family, each IP of the family at the same index of ipFamilies,
// known families and policies. ExternalName services are checked by the type
// rules instead (all four fields must be empty).
//
// It does not tie ipFamilyPolicy to the number of families or IPs, nor check
// that a family is configured on the cluster: upstream does that while
// allocating, where the cluster's families are known. oldSvc is nil on
// create; on update, IPs it held are accepted in legacy forms.
//
// ValidateService and ValidateServiceUpdate call it; the allocation code
// calls it too, before allocating, as upstream's does.
func ValidateServiceClusterIPsRelatedFields(svc, oldSvc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	clusterIPsPath := specPath.Child("clusterIPs")
	familiesPath := specPath.Child("ipFamilies")

	// The registry keeps clusterIP and clusterIPs in step, so that clients can
	// manage either; here they must agree.
	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(clusterIPsPath, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}

	// Families: known ones, each at most once (so two means dual-stack).
	seen := sets.New[corev1.IPFamily]()
	for i, family := range spec.IPFamilies {
		if !supportedIPFamilies.Has(family) {
			errs = append(errs, field.NotSupported(familiesPath.Index(i), family, sets.List(supportedIPFamilies)))
		}
		if seen.Has(family) {
			errs = append(errs, field.Duplicate(familiesPath.Index(i), family))
		}
		seen.Insert(family)
	}

	// A nil policy is fine: the registry defaults it while allocating.
	if spec.IPFamilyPolicy != nil && !supportedIPFamilyPolicies.Has(*spec.IPFamilyPolicy) {
		errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), spec.IPFamilyPolicy, sets.List(supportedIPFamilyPolicies)))
	}

	var oldClusterIPs []string
	if oldSvc != nil {
		oldClusterIPs = oldSvc.Spec.ClusterIPs
	}
	badIPs := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				badIPs = true
				errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		ipErrs := validation.IsValidIPForLegacyField(clusterIPsPath.Index(i), ip, strictIPCIDRValidation, oldClusterIPs)
		badIPs = badIPs || len(ipErrs) != 0
		errs = append(errs, ipErrs...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	// The checks below would only repeat a bad IP in other words.
	if badIPs {
		return errs
	}

	if len(spec.ClusterIPs) > 1 {
		dualStack, err := netutils.IsDualStackIPStrings(spec.ClusterIPs)
		if err != nil {
			errs = append(errs, field.InternalError(clusterIPsPath, fmt.Errorf("failed to check for dual stack with error:%v", err)))
		}
		if !dualStack {
			errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
		}
	}

	// Each IP must be of the family at its index, where one is given.
	if !headlessByClusterIPs(svc) {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			isV6 := netutils.IsIPv6String(ip)
			switch {
			case spec.IPFamilies[i] == corev1.IPv4Protocol && isV6:
				errs = append(errs, field.Invalid(clusterIPsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			case spec.IPFamilies[i] == corev1.IPv6Protocol && !isV6:
				errs = append(errs, field.Invalid(clusterIPsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}
	return errs
}

// validateClusterIPsUpdate keeps the cluster IPs a service was given: the
// primary may never change; a secondary may be added (upgrade to dual-stack)
// or released, the latter only with ipFamilyPolicy SingleStack. Changes to,
// from or between headless services and ExternalName services are free (the
// strategy clears cluster IPs when the type no longer uses them).
func validateClusterIPsUpdate(oldSvc, newSvc *corev1.Service) field.ErrorList {
	if newSvc.Spec.Type == corev1.ServiceTypeExternalName || oldSvc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if headlessByClusterIPs(oldSvc) && headlessByClusterIPs(newSvc) {
		return nil
	}
	var errs field.ErrorList
	oldIPs, newIPs := oldSvc.Spec.ClusterIPs, newSvc.Spec.ClusterIPs
	p := field.NewPath("spec", "clusterIPs")
	switch {
	case len(oldIPs) == len(newIPs):
		for i, ip := range oldIPs {
			if ip != newIPs[i] {
				errs = append(errs, field.Invalid(p.Index(i), newIPs, "may not change once set"))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "primary clusterIP can not be unset"))
		}
		if len(newIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "may not change once set"))
		}
		if len(newIPs) == 1 && !isSingleStack(newSvc) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), newSvc.Spec.IPFamilyPolicy,
				"must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	default: // an IP was added; whether the policy allows it is checked on its own
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "may not change once set"))
		}
	}
	return errs
}

// validateIPFamiliesUpdate is validateClusterIPsUpdate for ipFamilies: the
// primary family stays, a secondary may be added or, with SingleStack,
// released. Headless services may change families freely.
//
// Some of these errors carry clusterIPs rather than ipFamilies as their value,
// and "primary ipFamily can not be unset" looks at clusterIPs: both as
// upstream.
func validateIPFamiliesUpdate(oldSvc, newSvc *corev1.Service) field.ErrorList {
	if newSvc.Spec.Type == corev1.ServiceTypeExternalName || oldSvc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if headlessByClusterIPs(oldSvc) || headlessByClusterIPs(newSvc) {
		return nil
	}
	var errs field.ErrorList
	oldFams, newFams := oldSvc.Spec.IPFamilies, newSvc.Spec.IPFamilies
	first := field.NewPath("spec", "ipFamilies").Index(0)
	switch {
	case len(oldFams) == len(newFams):
		for i, f := range oldFams {
			if f != newFams[i] {
				errs = append(errs, field.Invalid(first, newFams, "may not change once set"))
			}
		}
	case len(oldFams) > len(newFams):
		if len(newSvc.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Invalid(first, newFams, "primary ipFamily can not be unset"))
		}
		if len(newFams) > 0 && newFams[0] != oldFams[0] {
			errs = append(errs, field.Invalid(first, newSvc.Spec.ClusterIPs, "may not change once set"))
		}
		if len(newFams) == 1 && !isSingleStack(newSvc) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), newSvc.Spec.IPFamilyPolicy,
				"must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	default:
		if len(oldFams) > 0 && newFams[0] != oldFams[0] {
			errs = append(errs, field.Invalid(first, newSvc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	return errs
}

func isSingleStack(svc *corev1.Service) bool {
	return svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack
}

// validateExternalIPs checks spec.externalIPs: valid IPs (old values are kept
// even in legacy forms) that are not unspecified, loopback or link-local.
func validateExternalIPs(svc, oldSvc *corev1.Service, fldPath *field.Path) field.ErrorList {
	var oldIPs []string
	if oldSvc != nil {
		oldIPs = oldSvc.Spec.ExternalIPs
	}
	var errs field.ErrorList
	for i, ip := range svc.Spec.ExternalIPs {
		idxPath := fldPath.Index(i)
		if ipErrs := validation.IsValidIPForLegacyField(idxPath, ip, strictIPCIDRValidation, oldIPs); len(ipErrs) != 0 {
			errs = append(errs, ipErrs...)
			continue
		}
		errs = append(errs, validateNonSpecialIP(ip, idxPath)...)
	}
	return errs
}

// validateNonSpecialIP is upstream's ValidateEndpointIP, which it applies to
// external IPs for historical reasons.
func validateNonSpecialIP(value string, fldPath *field.Path) field.ErrorList {
	ip := netutils.ParseIPSloppy(value)
	if ip == nil {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, value, fmt.Sprintf("may not be unspecified (%v)", value)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

// validateSourceRanges checks spec.loadBalancerSourceRanges or, when that is
// empty, the older annotation: only on load balancers, and valid CIDRs. The
// values may be padded with spaces (a leftover of the annotation). Values the
// old object held are kept even in legacy forms.
func validateSourceRanges(svc, oldSvc *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	isLB := svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	const lbOnly = "may only be used when `type` is 'LoadBalancer'"

	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		// Upstream's path for this field is capitalised; kept as is.
		fldPath := specPath.Child("LoadBalancerSourceRanges")
		if !isLB {
			errs = append(errs, field.Forbidden(fldPath, lbOnly))
		}
		var oldRanges []string
		if oldSvc != nil {
			for _, v := range oldSvc.Spec.LoadBalancerSourceRanges {
				oldRanges = append(oldRanges, strings.TrimSpace(v))
			}
		}
		for i, v := range svc.Spec.LoadBalancerSourceRanges {
			errs = append(errs, validation.IsValidCIDRForLegacyField(fldPath.Index(i), strings.TrimSpace(v), strictIPCIDRValidation, oldRanges)...)
		}
		return errs
	}

	val, set := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]
	if !set {
		return nil
	}
	fldPath := field.NewPath("metadata", "annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey)
	if !isLB {
		errs = append(errs, field.Forbidden(fldPath, lbOnly))
	}
	if oldSvc != nil && oldSvc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey] == val {
		return errs
	}
	if val = strings.TrimSpace(val); val == "" {
		return errs
	}
	for _, v := range strings.Split(val, ",") {
		errs = append(errs, validation.IsValidCIDRForLegacyField(fldPath, strings.TrimSpace(v), strictIPCIDRValidation, nil)...)
	}
	return errs
}
