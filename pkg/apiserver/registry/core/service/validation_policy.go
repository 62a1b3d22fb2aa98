package service

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxClientIPAffinitySeconds is the longest ClientIP session affinity: a day.
const maxClientIPAffinitySeconds int32 = 86400

var (
	supportedSessionAffinities        = sets.New(corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)
	supportedExternalTrafficPolicies  = sets.New(corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)
	supportedInternalTrafficPolicies  = sets.New(corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal)
	supportedTrafficDistributionsList = []string{
		// Upstream lists them in this order, not sorted.
		corev1.ServiceTrafficDistributionPreferClose,
		corev1.ServiceTrafficDistributionPreferSameZone,
		corev1.ServiceTrafficDistributionPreferSameNode,
	}
)

// validateSessionAffinity checks sessionAffinity and its config: ClientIP
// affinity needs a timeout in (0, 86400], None allows no config.
func validateSessionAffinity(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	affinityPath, configPath := specPath.Child("sessionAffinity"), specPath.Child("sessionAffinityConfig")
	if spec.SessionAffinity == "" {
		errs = append(errs, field.Required(affinityPath, ""))
	} else if !supportedSessionAffinities.Has(spec.SessionAffinity) {
		errs = append(errs, field.NotSupported(affinityPath, spec.SessionAffinity, sets.List(supportedSessionAffinities)))
	}

	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		errs = append(errs, validateClientIPAffinityConfig(spec.SessionAffinityConfig, configPath)...)
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(configPath, fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	}
	return errs
}

func validateClientIPAffinityConfig(cfg *corev1.SessionAffinityConfig, fldPath *field.Path) field.ErrorList {
	required := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
	switch {
	case cfg == nil:
		return field.ErrorList{field.Required(fldPath, required)}
	case cfg.ClientIP == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP"), required)}
	case cfg.ClientIP.TimeoutSeconds == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP", "timeoutSeconds"), required)}
	}
	timeout := cfg.ClientIP.TimeoutSeconds
	if *timeout <= 0 || *timeout > maxClientIPAffinitySeconds {
		return field.ErrorList{field.Invalid(fldPath.Child("clientIP", "timeoutSeconds"), timeout,
			fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds))}
	}
	return nil
}

// hasHealthCheckNodePort reports whether the service needs a health-check
// node port: a load balancer that keeps external traffic on the node that
// received it, so the load balancer must learn which nodes have endpoints.
func hasHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// validateExternalTrafficPolicy checks externalTrafficPolicy (set exactly on
// externally accessible services) and healthCheckNodePort (set exactly when
// hasHealthCheckNodePort; the registry allocates it before validation).
func validateExternalTrafficPolicy(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	etpPath, hcPath := specPath.Child("externalTrafficPolicy"), specPath.Child("healthCheckNodePort")
	var errs field.ErrorList

	switch {
	case !isExternallyAccessible(svc):
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etpPath, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	case spec.ExternalTrafficPolicy == "":
		errs = append(errs, field.Required(etpPath, ""))
	case !supportedExternalTrafficPolicies.Has(spec.ExternalTrafficPolicy):
		errs = append(errs, field.NotSupported(etpPath, spec.ExternalTrafficPolicy, sets.List(supportedExternalTrafficPolicies)))
	}

	switch {
	case !hasHealthCheckNodePort(svc):
		if spec.HealthCheckNodePort != 0 {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort,
				"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	case spec.HealthCheckNodePort == 0:
		errs = append(errs, field.Required(hcPath, ""))
	default:
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, msg))
		}
	}
	return errs
}

// validateHealthCheckNodePortUpdate keeps the health-check node port while
// the service needs one.
func validateHealthCheckNodePortUpdate(oldSvc, newSvc *corev1.Service) field.ErrorList {
	if hasHealthCheckNodePort(oldSvc) && hasHealthCheckNodePort(newSvc) &&
		newSvc.Spec.HealthCheckNodePort != oldSvc.Spec.HealthCheckNodePort {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable")}
	}
	return nil
}

// validateInternalTrafficPolicy requires internalTrafficPolicy on the types
// that route in-cluster traffic (the defaulter sets it) and checks its value.
// ExternalName services may carry one for historical reasons.
func validateInternalTrafficPolicy(svc *corev1.Service) field.ErrorList {
	p := field.NewPath("spec", "internalTrafficPolicy")
	itp := svc.Spec.InternalTrafficPolicy
	if itp == nil {
		switch svc.Spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	}
	if !supportedInternalTrafficPolicies.Has(*itp) {
		return field.ErrorList{field.NotSupported(p, *itp, sets.List(supportedInternalTrafficPolicies))}
	}
	return nil
}

// validateTrafficDistribution checks trafficDistribution against the values
// v1.37 accepts (PreferSameZone and PreferSameNode are GA; PreferClose is
// deprecated but accepted, with a warning).
func validateTrafficDistribution(svc *corev1.Service) field.ErrorList {
	td := svc.Spec.TrafficDistribution
	if td == nil || slices.Contains(supportedTrafficDistributionsList, *td) {
		return nil
	}
	return field.ErrorList{field.NotSupported(field.NewPath("spec", "trafficDistribution"), *td, supportedTrafficDistributionsList)}
}

// validateLoadBalancerClass checks loadBalancerClass: a qualified name, and
// only on load balancers.
func validateLoadBalancerClass(svc *corev1.Service) field.ErrorList {
	class := svc.Spec.LoadBalancerClass
	if class == nil {
		return nil
	}
	p := field.NewPath("spec", "loadBalancerClass")
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return field.ErrorList{field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(*class) {
		errs = append(errs, field.Invalid(p, *class, msg))
	}
	return errs
}

// validateLoadBalancerClassUpdate keeps the class of a load balancer: the
// controller that implements it owns the load balancer. A service that stops
// or starts being a load balancer may change it.
func validateLoadBalancerClassUpdate(oldSvc, newSvc *corev1.Service) field.ErrorList {
	if oldSvc.Spec.Type != corev1.ServiceTypeLoadBalancer || newSvc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	o, n := oldSvc.Spec.LoadBalancerClass, newSvc.Spec.LoadBalancerClass
	if (o == nil) == (n == nil) && (o == nil || *o == *n) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "loadBalancerClass"), n, "may not change once set")}
}
