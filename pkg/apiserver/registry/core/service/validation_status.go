package service

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

var supportedLoadBalancerIPModes = sets.New(corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy)

// ValidateServiceStatusUpdate validates a write to services/status: metadata
// rules and status.loadBalancer. The status strategy has already put the old
// spec back, so the spec is the stored one.
//
// As upstream, status.conditions and status.loadBalancer.ingress[].ports are
// not validated.
func ValidateServiceStatusUpdate(newSvc, oldSvc *corev1.Service) field.ErrorList {
	errs := validateMetadataUpdate(newSvc, oldSvc)
	return append(errs, validateLoadBalancerStatus(&newSvc.Status.LoadBalancer, &oldSvc.Status.LoadBalancer,
		field.NewPath("status", "loadBalancer"), &newSvc.Spec)...)
}

// validateLoadBalancerStatus checks the ingress points a load-balancer
// controller reports: only on LoadBalancer services; each IP valid (IPs the
// old status held are kept even in legacy forms) with an ipMode, each
// hostname a DNS name that is not an IP.
func validateLoadBalancerStatus(status, oldStatus *corev1.LoadBalancerStatus, fldPath *field.Path, spec *corev1.ServiceSpec) field.ErrorList {
	ingressPath := fldPath.Child("ingress")
	if spec.Type != corev1.ServiceTypeLoadBalancer && len(status.Ingress) != 0 {
		return field.ErrorList{field.Forbidden(ingressPath, "may only be used when `spec.type` is 'LoadBalancer'")}
	}

	var oldIPs []string
	if oldStatus != nil {
		for _, ing := range oldStatus.Ingress {
			if ing.IP != "" {
				oldIPs = append(oldIPs, ing.IP)
			}
		}
	}

	var errs field.ErrorList
	for i, ing := range status.Ingress {
		idxPath := ingressPath.Index(i)
		if ing.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(idxPath.Child("ip"), ing.IP, strictIPCIDRValidation, oldIPs)...)
		}

		switch {
		case ing.IPMode == nil:
			if ing.IP != "" {
				errs = append(errs, field.Required(idxPath.Child("ipMode"), "must be specified when `ip` is set"))
			}
		case ing.IP == "":
			errs = append(errs, field.Forbidden(idxPath.Child("ipMode"), "may not be specified when `ip` is not set"))
		case !supportedLoadBalancerIPModes.Has(*ing.IPMode):
			errs = append(errs, field.NotSupported(idxPath.Child("ipMode"), ing.IPMode, sets.List(supportedLoadBalancerIPModes)))
		}

		if ing.Hostname != "" {
			hostPath := idxPath.Child("hostname")
			for _, msg := range validation.IsDNS1123Subdomain(ing.Hostname) {
				errs = append(errs, field.Invalid(hostPath, ing.Hostname, msg))
			}
			if netutils.ParseIPSloppy(ing.Hostname) != nil {
				errs = append(errs, field.Invalid(hostPath, ing.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}
