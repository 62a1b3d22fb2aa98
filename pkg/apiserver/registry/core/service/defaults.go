package service

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// SetDefaults applies the defaults Kubernetes' v1 defaulter applies to a Service
// (SetDefaults_Service and the generated SetObjectDefaults_Service), so that
// `kubectl get svc -o yaml` shows the same object as on a real cluster. It only
// fills in unset fields, so running it again changes nothing.
//
// The IP-family fields (clusterIPs, ipFamilies, ipFamilyPolicy) and the
// allocated clusterIP and node ports are not defaults: the registry fills them
// in when it allocates (see the alloc files of this package).
func SetDefaults(svc *corev1.Service) {
	spec := &svc.Spec

	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		// A config without ClientIP affinity means nothing; upstream drops it.
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		cfg := spec.SessionAffinityConfig
		if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}

	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}

	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		// Both zero values of an IntOrString mean "not set".
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}

	if isExternallyAccessible(svc) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}

	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		}
	}

	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		for i := range svc.Status.LoadBalancer.Ingress {
			ing := &svc.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// isExternallyAccessible reports whether traffic from outside the cluster
// reaches the service: node ports, a load balancer, or external IPs on a
// ClusterIP service. Only such services have an external traffic policy.
func isExternallyAccessible(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(svc.Spec.ExternalIPs) > 0
	}
	return false
}
