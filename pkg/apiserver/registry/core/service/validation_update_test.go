package service

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestValidateServiceUpdate(t *testing.T) {
	toExternalName := func(s *corev1.Service) {
		// As the strategy leaves it: cluster IPs and families dropped.
		s.Spec.Type = corev1.ServiceTypeExternalName
		s.Spec.ExternalName = "web.example.com"
		withClusterIPs()(s)
		s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = nil, nil
	}
	lbClass := func(c *string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.LoadBalancerClass = c }
	}
	local := func(hc int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = hc
		}
	}
	tests := []struct {
		name     string
		old, new *corev1.Service
		want     []string
	}{
		{name: "no change", old: clusterIPService(), new: clusterIPService()},
		{name: "ports and selector change", old: clusterIPService(),
			new: clusterIPService(withPorts(port("http", 80), port("https", 443)), func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web2"} })},
		{name: "rename", old: clusterIPService(), new: clusterIPService(func(s *corev1.Service) { s.Name = "web2" }),
			want: []string{`metadata.name: Invalid value: "web2": field is immutable`}},
		{name: "the new state is validated", old: clusterIPService(), new: clusterIPService(withPorts()),
			want: []string{"spec.ports: Required value"}},
		{name: "name rules are not rechecked", old: clusterIPService(func(s *corev1.Service) { s.Name = "web.v1" }),
			new: clusterIPService(func(s *corev1.Service) { s.Name = "web.v1" })},

		{name: "cluster IP changed", old: clusterIPService(), new: clusterIPService(withClusterIPs("10.96.0.11")),
			want: []string{`spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set`}},
		{name: "cluster IP unset", old: clusterIPService(), new: clusterIPService(withClusterIPs()),
			want: []string{`spec.clusterIPs[0]: Invalid value: null: primary clusterIP can not be unset`}},
		{name: "upgrade to dual-stack", old: clusterIPService(),
			new: clusterIPService(withClusterIPs("10.96.0.10", "fd00::a"), withFamilies(corev1.IPFamilyPolicyPreferDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol))},
		{name: "upgrade that changes the primary", old: clusterIPService(),
			new: clusterIPService(withClusterIPs("fd00::a", "10.96.0.10"), withFamilies(corev1.IPFamilyPolicyPreferDualStack, corev1.IPv6Protocol, corev1.IPv4Protocol)),
			want: []string{
				`spec.clusterIPs[0]: Invalid value: ["fd00::a","10.96.0.10"]: may not change once set`,
				`spec.ipFamilies[0]: Invalid value: ["fd00::a","10.96.0.10"]: may not change once set`,
			}},
		{name: "downgrade to single-stack", old: clusterIPService(withDualStack),
			new: clusterIPService(withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol))},
		{name: "downgrade without SingleStack", old: clusterIPService(withDualStack),
			new: clusterIPService(withFamilies(corev1.IPFamilyPolicyPreferDualStack, corev1.IPv4Protocol)),
			want: []string{
				`spec.ipFamilyPolicy: Invalid value: "PreferDualStack": must be set to 'SingleStack' when releasing the secondary clusterIP`,
				`spec.ipFamilyPolicy: Invalid value: "PreferDualStack": must be set to 'SingleStack' when releasing the secondary ipFamily`,
			}},
		{name: "downgrade keeping the secondary", old: clusterIPService(withDualStack),
			new: clusterIPService(withClusterIPs("fd00:10:96::a"), withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol)),
			want: []string{
				`spec.clusterIPs[0]: Invalid value: ["fd00:10:96::a"]: may not change once set`,
				`spec.ipFamilies[0]: Invalid value: ["fd00:10:96::a"]: may not change once set`,
			}},
		{name: "family changed", old: clusterIPService(), new: clusterIPService(withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol)),
			want: []string{
				`spec.ipFamilies[0]: Invalid value: ["IPv6"]: may not change once set`,
				`spec.clusterIPs[0]: Invalid value: "10.96.0.10": expected an IPv6 value as indicated by ` + "`ipFamilies[0]`",
			}},
		{name: "families dropped with the cluster IPs", old: clusterIPService(),
			new: clusterIPService(withClusterIPs(), func(s *corev1.Service) { s.Spec.IPFamilies = nil }),
			want: []string{
				`spec.clusterIPs[0]: Invalid value: null: primary clusterIP can not be unset`,
				`spec.ipFamilies[0]: Invalid value: null: primary ipFamily can not be unset`,
			}},

		{name: "ClusterIP to ExternalName", old: clusterIPService(), new: clusterIPService(toExternalName)},
		{name: "ExternalName to ClusterIP with an IP", old: externalNameService(), new: clusterIPService(func(s *corev1.Service) { s.Name = "db" })},
		{name: "ClusterIP to NodePort keeps the IP", old: clusterIPService(), new: nodePortService()},
		{name: "headless to ClusterIP", old: headlessService(), new: clusterIPService(),
			want: []string{`spec.clusterIPs[0]: Invalid value: ["10.96.0.10"]: may not change once set`}},
		{name: "ClusterIP to headless", old: clusterIPService(), new: headlessService(),
			want: []string{`spec.clusterIPs[0]: Invalid value: ["None"]: may not change once set`}},
		{name: "headless may change families", old: headlessService(),
			new: headlessService(withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol))},

		{name: "load-balancer class changed", old: loadBalancerService(lbClass(ptr.To("example.com/a"))), new: loadBalancerService(lbClass(ptr.To("example.com/b"))),
			want: []string{`spec.loadBalancerClass: Invalid value: "example.com/b": may not change once set`}},
		{name: "load-balancer class set", old: loadBalancerService(), new: loadBalancerService(lbClass(ptr.To("example.com/a"))),
			want: []string{`spec.loadBalancerClass: Invalid value: "example.com/a": may not change once set`}},
		{name: "load-balancer class unset", old: loadBalancerService(lbClass(ptr.To("example.com/a"))), new: loadBalancerService(),
			want: []string{`spec.loadBalancerClass: Invalid value: null: may not change once set`}},
		{name: "load-balancer class set when becoming a load balancer", old: nodePortService(), new: loadBalancerService(lbClass(ptr.To("example.com/a")))},
		{name: "changed to an invalid class, reported once per rule", old: loadBalancerService(), new: loadBalancerService(lbClass(ptr.To("a b"))),
			want: []string{
				`spec.loadBalancerClass: Invalid value: "a b": may not change once set`,
				`spec.loadBalancerClass: Invalid value: "a b": ` + qualifiedNameMsg,
			}},

		{name: "health check port changed", old: loadBalancerService(local(30100)), new: loadBalancerService(local(30101)),
			want: []string{"spec.healthCheckNodePort: Forbidden: field is immutable"}},
		{name: "health check port allocated on a change to Local", old: loadBalancerService(), new: loadBalancerService(local(30100))},

		{name: "legacy external IP kept", old: clusterIPService(withExternalIPs("203.0.113.007")), new: clusterIPService(withExternalIPs("203.0.113.007", "203.0.113.8"))},
		{name: "legacy external IP added", old: clusterIPService(withExternalIPs("203.0.113.8")), new: clusterIPService(withExternalIPs("203.0.113.8", "203.0.113.007")),
			want: []string{`spec.externalIPs[1]: Invalid value: "203.0.113.007": must not have leading 0s`}},
		{name: "legacy source range kept, padding aside", old: loadBalancerService(func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.1/8 "} }),
			new: loadBalancerService(func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{" 10.0.0.1/8"} })},
		{name: "legacy source-range annotation kept", old: loadBalancerService(withAnnotation(corev1.AnnotationLoadBalancerSourceRangesKey, "10.0.0.1/8")),
			new: loadBalancerService(withAnnotation(corev1.AnnotationLoadBalancerSourceRangesKey, "10.0.0.1/8"))},
		{name: "legacy cluster IP kept", old: clusterIPService(withClusterIPs("10.096.0.10")), new: clusterIPService(withClusterIPs("10.096.0.10"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateServiceUpdate(tc.new, tc.old), tc.want) })
	}
}
