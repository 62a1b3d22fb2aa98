package service

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Warnings returns the warnings a create or update of svc sends back to the
// client (kubectl prints them as "Warning: ..."), as upstream's
// GetWarningsForService: deprecated fields and annotations, fields that are
// ignored for the service's type, and IPs and CIDRs in non-canonical forms
// that validation still accepts. It is for the strategy's WarningsOnCreate and
// WarningsOnUpdate.
func Warnings(svc *corev1.Service) []string {
	if svc == nil {
		return nil
	}
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	var warnings []string

	if _, ok := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]; ok {
		warnings = append(warnings, fmt.Sprintf("annotation %s is deprecated, please use %s instead",
			corev1.DeprecatedAnnotationTopologyAwareHints, corev1.AnnotationTopologyMode))
	}

	if spec.ClusterIP != "" && spec.ClusterIP != corev1.ClusterIPNone {
		for i, ip := range spec.ClusterIPs {
			warnings = append(warnings, validation.GetWarningsForIP(specPath.Child("clusterIPs").Index(i), ip)...)
		}
	}

	// Unlike validation, the warnings call a service headless by its
	// clusterIP and type, as upstream does.
	headless := spec.Type == corev1.ServiceTypeClusterIP && spec.ClusterIP == corev1.ClusterIPNone
	if headless {
		if spec.LoadBalancerIP != "" {
			warnings = append(warnings, "spec.loadBalancerIP is ignored for headless services")
		}
		if len(spec.ExternalIPs) > 0 {
			warnings = append(warnings, "spec.externalIPs is ignored for headless services")
		}
		if spec.SessionAffinity != corev1.ServiceAffinityNone {
			warnings = append(warnings, "spec.SessionAffinity is ignored for headless services")
		}
	}

	for i, ip := range spec.ExternalIPs {
		warnings = append(warnings, validation.GetWarningsForIP(specPath.Child("externalIPs").Index(i), ip)...)
	}
	if len(spec.ExternalIPs) > 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		warnings = append(warnings, "spec.externalIPs is deprecated and may no longer be implemented in some clusters")
	}

	if spec.LoadBalancerIP != "" {
		warnings = append(warnings, validation.GetWarningsForIP(specPath.Child("loadBalancerIP"), spec.LoadBalancerIP)...)
	}
	for i, cidr := range spec.LoadBalancerSourceRanges {
		warnings = append(warnings, validation.GetWarningsForCIDR(specPath.Child("loadBalancerSourceRanges").Index(i), cidr)...)
	}

	if spec.Type == corev1.ServiceTypeExternalName && len(spec.ExternalIPs) > 0 {
		warnings = append(warnings, fmt.Sprintf("spec.externalIPs is ignored when spec.type is %q", corev1.ServiceTypeExternalName))
	}
	if spec.Type != corev1.ServiceTypeExternalName && spec.ExternalName != "" {
		warnings = append(warnings, fmt.Sprintf("spec.externalName is ignored when spec.type is not %q", corev1.ServiceTypeExternalName))
	}

	if td := spec.TrafficDistribution; td != nil && *td == corev1.ServiceTrafficDistributionPreferClose {
		warnings = append(warnings, fmt.Sprintf("spec.trafficDistribution: %q is deprecated; use %q",
			corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone))
	}
	return warnings
}

// StatusWarnings returns the warnings of a services/status write: ingress IPs
// in non-canonical forms. The path is the ingress entry, not its ip field, as
// upstream reports it.
func StatusWarnings(svc *corev1.Service) []string {
	var warnings []string
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			warnings = append(warnings, validation.GetWarningsForIP(p.Index(i), ing.IP)...)
		}
	}
	return warnings
}
