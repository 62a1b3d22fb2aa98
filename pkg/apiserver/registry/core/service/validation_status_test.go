package service

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func withIngress(ingress ...corev1.LoadBalancerIngress) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = ingress }
}

func vip(ip string) corev1.LoadBalancerIngress {
	return corev1.LoadBalancerIngress{IP: ip, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}
}

func TestValidateServiceStatusUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *corev1.Service
		want     []string
	}{
		{name: "ingress IPs and hostname", old: loadBalancerService(),
			new: loadBalancerService(withIngress(vip("198.51.100.7"), vip("2001:db8::7"),
				corev1.LoadBalancerIngress{IP: "198.51.100.8", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)},
				corev1.LoadBalancerIngress{Hostname: "lb-123.elb.example.com", Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}}))},
		{name: "ingress cleared", old: loadBalancerService(withIngress(vip("198.51.100.7"))), new: loadBalancerService()},
		{name: "ingress on a NodePort service", old: nodePortService(), new: nodePortService(withIngress(vip("198.51.100.7"))),
			want: []string{"status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"}},
		{name: "IP without ipMode", old: loadBalancerService(), new: loadBalancerService(withIngress(corev1.LoadBalancerIngress{IP: "198.51.100.7"})),
			want: []string{"status.loadBalancer.ingress[0].ipMode: Required value: must be specified when `ip` is set"}},
		{name: "ipMode without IP", old: loadBalancerService(),
			new:  loadBalancerService(withIngress(corev1.LoadBalancerIngress{Hostname: "lb.example.com", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)})),
			want: []string{"status.loadBalancer.ingress[0].ipMode: Forbidden: may not be specified when `ip` is not set"}},
		{name: "unknown ipMode", old: loadBalancerService(),
			new:  loadBalancerService(withIngress(corev1.LoadBalancerIngress{IP: "198.51.100.7", IPMode: ptr.To[corev1.LoadBalancerIPMode]("Direct")})),
			want: []string{`status.loadBalancer.ingress[0].ipMode: Unsupported value: "Direct": supported values: "Proxy", "VIP"`}},
		{name: "bad IP", old: loadBalancerService(), new: loadBalancerService(withIngress(vip("198.51.100"))),
			want: []string{`status.loadBalancer.ingress[0].ip: Invalid value: "198.51.100": ` + badIPMsg}},
		{name: "new legacy IP", old: loadBalancerService(), new: loadBalancerService(withIngress(vip("198.51.100.07"))),
			want: []string{`status.loadBalancer.ingress[0].ip: Invalid value: "198.51.100.07": must not have leading 0s`}},
		{name: "legacy IP kept", old: loadBalancerService(withIngress(vip("198.51.100.07"))),
			new: loadBalancerService(withIngress(vip("198.51.100.8"), vip("198.51.100.07")))},
		{name: "hostname that is an IP", old: loadBalancerService(), new: loadBalancerService(withIngress(corev1.LoadBalancerIngress{Hostname: "198.51.100.7"})),
			want: []string{`status.loadBalancer.ingress[0].hostname: Invalid value: "198.51.100.7": must be a DNS name, not an IP address`}},
		{name: "hostname not a DNS name", old: loadBalancerService(), new: loadBalancerService(withIngress(corev1.LoadBalancerIngress{Hostname: "LB_1.example.com"})),
			want: []string{`status.loadBalancer.ingress[0].hostname: Invalid value: "LB_1.example.com": ` + dns1123SubdomainMsg}},
		{name: "conditions are not validated", old: loadBalancerService(), new: loadBalancerService(func(s *corev1.Service) {
			s.Status.Conditions = []metav1.Condition{{Type: "whatever you like", Status: "Maybe"}}
		})},
		{name: "labels change", old: loadBalancerService(), new: loadBalancerService(func(s *corev1.Service) { s.Labels = map[string]string{"tier": "front"} })},
		{name: "rename", old: loadBalancerService(), new: loadBalancerService(func(s *corev1.Service) { s.Name = "web2" }),
			want: []string{`metadata.name: Invalid value: "web2": field is immutable`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateServiceStatusUpdate(tc.new, tc.old), tc.want) })
	}
}
