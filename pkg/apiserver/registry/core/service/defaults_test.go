package service

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestSetDefaults(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "web", Namespace: "shop"}
	cluster := ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	tests := []struct {
		name     string
		in, want corev1.ServiceSpec
		status   corev1.ServiceStatus // input status; want is wantStatus
		wantStat corev1.ServiceStatus
	}{{
		// `kubectl create service clusterip web --tcp=80` without the targetPort.
		name: "minimal",
		in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		want: corev1.ServiceSpec{
			Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
			Type:                  corev1.ServiceTypeClusterIP,
			SessionAffinity:       corev1.ServiceAffinityNone,
			InternalTrafficPolicy: cluster,
		},
	}, {
		name: "targetPort as an empty name",
		in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("")}}},
		want: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
			Type:  corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
		},
	}, {
		name: "given values are kept",
		in: corev1.ServiceSpec{
			Ports:                 []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}},
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
		},
		want: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}},
			Type:  corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
		},
	}, {
		name: "ClientIP affinity gets the default timeout",
		in:   corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityClientIP, InternalTrafficPolicy: cluster,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}},
		},
	}, {
		name: "ClientIP affinity with an empty clientIP",
		in:   corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP, SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{}}},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityClientIP, InternalTrafficPolicy: cluster,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}},
		},
	}, {
		name: "ClientIP timeout kept",
		in: corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityClientIP, InternalTrafficPolicy: cluster,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}},
		},
	}, {
		name: "no affinity drops the config",
		in: corev1.ServiceSpec{
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}},
		want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster},
	}, {
		name: "unknown affinity is left for validation",
		in:   corev1.ServiceSpec{SessionAffinity: "Sticky"},
		want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: "Sticky", InternalTrafficPolicy: cluster},
	}, {
		name: "ClusterIP with external IPs gets an external traffic policy",
		in:   corev1.ServiceSpec{ExternalIPs: []string{"203.0.113.7"}},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
			ExternalIPs: []string{"203.0.113.7"}, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
	}, {
		name: "NodePort",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
	}, {
		name: "NodePort keeps Local",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
		},
	}, {
		name: "LoadBalancer",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, AllocateLoadBalancerNodePorts: ptr.To(true),
		},
		status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "198.51.100.7"}, {Hostname: "lb.example.com"}, {IP: "198.51.100.8", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)},
		}}},
		wantStat: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "198.51.100.7", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}, {Hostname: "lb.example.com"},
			{IP: "198.51.100.8", IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)},
		}}},
	}, {
		name: "LoadBalancer keeps allocateLoadBalancerNodePorts=false",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr.To(false)},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, AllocateLoadBalancerNodePorts: ptr.To(false),
		},
	}, {
		name: "ingress ipMode only on load balancers",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
		status:   corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}}},
		wantStat: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}}},
	}, {
		name: "ExternalName gets no traffic policies",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com", ExternalIPs: []string{"203.0.113.7"}},
		want: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com", ExternalIPs: []string{"203.0.113.7"},
			SessionAffinity: corev1.ServiceAffinityNone},
	}, {
		name: "IP-family fields are left to allocation",
		in:   corev1.ServiceSpec{ClusterIP: "10.96.0.10"},
		want: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: meta, Spec: tc.in, Status: tc.status}
			want := &corev1.Service{ObjectMeta: meta, Spec: tc.want, Status: tc.wantStat}
			SetDefaults(svc)
			if !apiequality.Semantic.DeepEqual(svc, want) {
				t.Fatalf("defaulted service differs (-want +got):\n%s", diff.Diff(want, svc))
			}
			again := svc.DeepCopy()
			SetDefaults(again)
			if !apiequality.Semantic.DeepEqual(again, svc) {
				t.Errorf("SetDefaults is not idempotent (-once +twice):\n%s", diff.Diff(svc, again))
			}
		})
	}
}

// What a client sends, defaulted and then allocated as the registry does,
// validates.
func TestSetDefaultsThenValidate(t *testing.T) {
	allocate := func(s *corev1.Service) {
		if s.Spec.Type == corev1.ServiceTypeExternalName {
			return
		}
		withClusterIPs("10.96.0.10")(s)
		withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol)(s)
		if s.Spec.Type != corev1.ServiceTypeClusterIP {
			for i := range s.Spec.Ports {
				s.Spec.Ports[i].NodePort = 30000 + int32(i)
			}
		}
	}
	ports := []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}
	for _, spec := range []corev1.ServiceSpec{
		{Ports: ports, Selector: map[string]string{"app": "web"}},
		{Ports: ports, SessionAffinity: corev1.ServiceAffinityClientIP},
		{Ports: ports, ExternalIPs: []string{"203.0.113.7"}},
		{Ports: ports, Type: corev1.ServiceTypeNodePort},
		{Ports: ports, Type: corev1.ServiceTypeLoadBalancer},
		{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
	} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: *spec.DeepCopy()}
		SetDefaults(svc)
		allocate(svc)
		if errs := ValidateService(svc); len(errs) != 0 {
			t.Errorf("%s service: %v", svc.Spec.Type, errs)
		}
	}
}
