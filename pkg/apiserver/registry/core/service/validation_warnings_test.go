package service

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "none", svc: clusterIPService()},
		{name: "nil", svc: nil},
		{name: "deprecated topology annotation", svc: clusterIPService(withAnnotation(corev1.DeprecatedAnnotationTopologyAwareHints, "Auto")),
			want: []string{"annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead"}},
		{name: "non-canonical cluster IPs", svc: clusterIPService(withClusterIPs("10.96.0.010", "FD00::A"), withFamilies(corev1.IPFamilyPolicyRequireDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol)),
			want: []string{
				`spec.clusterIPs[0]: non-standard IP address "10.96.0.010" is invalid: use "10.96.0.10"`,
				`spec.clusterIPs[1]: IPv6 address "FD00::A" should be in RFC 5952 canonical format ("fd00::a")`,
			}},
		{name: "headless with ignored fields", svc: headlessService(withExternalIPs("203.0.113.7"), func(s *corev1.Service) {
			s.Spec.LoadBalancerIP = "198.51.100.7"
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		}), want: []string{
			"spec.loadBalancerIP is ignored for headless services",
			"spec.externalIPs is ignored for headless services",
			"spec.SessionAffinity is ignored for headless services",
		}},
		{name: "external IPs", svc: clusterIPService(withExternalIPs("203.0.113.007")),
			want: []string{
				`spec.externalIPs[0]: non-standard IP address "203.0.113.007" is invalid: use "203.0.113.7"`,
				"spec.externalIPs is deprecated and may no longer be implemented in some clusters",
			}},
		{name: "ambiguous source range", svc: loadBalancerService(func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.1/8"} }),
			want: []string{`spec.loadBalancerSourceRanges[0]: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or "10.0.0.1/32"?)`}},
		{name: "ExternalName with external IPs", svc: externalNameService(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"203.0.113.7"} }),
			want: []string{`spec.externalIPs is ignored when spec.type is "ExternalName"`}},
		{name: "externalName on a ClusterIP service", svc: clusterIPService(func(s *corev1.Service) { s.Spec.ExternalName = "db.example.com" }),
			want: []string{`spec.externalName is ignored when spec.type is not "ExternalName"`}},
		{name: "PreferClose", svc: clusterIPService(func(s *corev1.Service) { s.Spec.TrafficDistribution = ptr.To("PreferClose") }),
			want: []string{`spec.trafficDistribution: "PreferClose" is deprecated; use "PreferSameZone"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Warnings(tc.svc); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("warnings:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestStatusWarnings(t *testing.T) {
	svc := loadBalancerService(withIngress(vip("198.51.100.7"), vip("198.51.100.07"), corev1.LoadBalancerIngress{Hostname: "lb.example.com"}))
	want := []string{`status.loadBalancer.ingress[1]: non-standard IP address "198.51.100.07" is invalid: use "198.51.100.7"`}
	if got := StatusWarnings(svc); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
}
