package service

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// clusterIPService is a defaulted ClusterIP service as the registry leaves it
// after allocation, just before validation.
func clusterIPService(mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "7"},
		Spec: corev1.ServiceSpec{
			Selector:       map[string]string{"app": "web"},
			Ports:          []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			ClusterIP:      "10.96.0.10",
			ClusterIPs:     []string{"10.96.0.10"},
			IPFamilies:     []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
		},
	}
	SetDefaults(svc)
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

// nodePortService is clusterIPService of type NodePort with its node port.
func nodePortService(mutate ...func(*corev1.Service)) *corev1.Service {
	return clusterIPService(append([]func(*corev1.Service){func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
		SetDefaults(s)
	}}, mutate...)...)
}

// loadBalancerService is nodePortService of type LoadBalancer.
func loadBalancerService(mutate ...func(*corev1.Service)) *corev1.Service {
	return nodePortService(append([]func(*corev1.Service){func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		SetDefaults(s)
	}}, mutate...)...)
}

// headlessService is a defaulted headless service: clusterIP None.
func headlessService(mutate ...func(*corev1.Service)) *corev1.Service {
	return clusterIPService(append([]func(*corev1.Service){func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
		s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}}, mutate...)...)
}

// externalNameService is a defaulted ExternalName service.
func externalNameService(mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", ResourceVersion: "7"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
	}
	SetDefaults(svc)
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

func withPorts(ports ...corev1.ServicePort) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Spec.Ports = ports }
}

// port is a defaulted TCP port whose targetPort is the port.
func port(name string, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(p)}
}

func withClusterIPs(ips ...string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.ClusterIPs = ips
		s.Spec.ClusterIP = ""
		if len(ips) > 0 {
			s.Spec.ClusterIP = ips[0]
		}
	}
}

func withFamilies(policy corev1.IPFamilyPolicy, families ...corev1.IPFamily) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = &policy
		s.Spec.IPFamilies = families
	}
}

func withDualStack(s *corev1.Service) {
	withClusterIPs("10.96.0.10", "fd00:10:96::a")(s)
	withFamilies(corev1.IPFamilyPolicyRequireDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol)(s)
}

// withExternalIPs sets external IPs and, as the defaulter would, an external
// traffic policy.
func withExternalIPs(ips ...string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.ExternalIPs = ips
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
}

func withAnnotation(k, v string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

// assertErrors compares errs with want, in order, as `kubectl` prints them
// ("path: Type: value: detail"), so that paths, types, bad values and
// details are all checked.
func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Error()
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got:\n  %s\nwant:\n  %s", strings.Join(orNone(got), "\n  "), strings.Join(orNone(want), "\n  "))
	}
}

func orNone(lines []string) []string {
	if len(lines) == 0 {
		return []string{"(none)"}
	}
	return lines
}

// Messages that come from apimachinery's format checks, looked up rather than
// copied so that the tests follow the library.
var (
	dns1123LabelMsg     = validation.IsDNS1123Label("X")[0]
	dns1123SubdomainMsg = validation.IsDNS1123Subdomain("X")[0]
	qualifiedNameMsg    = validation.IsQualifiedName("a b")[0]
	portRangeMsg        = validation.IsValidPortNum(0)[0]
	portNameLongMsg     = validation.IsValidPortName("abcdefghijklmnop")[0]
)

const (
	badIPMsg   = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
	badCIDRMsg = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
	lbOnly     = "may only be used when `type` is 'LoadBalancer'"
)

func TestValidateServiceFixturesAreValid(t *testing.T) {
	for name, svc := range map[string]*corev1.Service{
		"ClusterIP":    clusterIPService(),
		"dual-stack":   clusterIPService(withDualStack),
		"NodePort":     nodePortService(),
		"LoadBalancer": loadBalancerService(),
		"headless":     headlessService(),
		"ExternalName": externalNameService(),
	} {
		t.Run(name, func(t *testing.T) { assertErrors(t, ValidateService(svc), nil) })
	}
}

func TestValidateServiceMetadata(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "name may start with a digit (RelaxedServiceNameValidation)",
			svc: clusterIPService(func(s *corev1.Service) { s.Name = "1-web" })},
		{name: "name with a dot", svc: clusterIPService(func(s *corev1.Service) { s.Name = "web.v1" }),
			want: []string{`metadata.name: Invalid value: "web.v1": ` + validation.IsDNS1123Label("web.v1")[0]}},
		{name: "uppercase name", svc: clusterIPService(func(s *corev1.Service) { s.Name = "Web" }),
			want: []string{`metadata.name: Invalid value: "Web": ` + dns1123LabelMsg}},
		{name: "no name", svc: clusterIPService(func(s *corev1.Service) { s.Name = "" }),
			want: []string{"metadata.name: Required value: name or generateName is required"}},
		{name: "no namespace", svc: clusterIPService(func(s *corev1.Service) { s.Namespace = "" }),
			want: []string{"metadata.namespace: Required value"}},
		{name: "finalizer without a domain", svc: clusterIPService(func(s *corev1.Service) { s.Finalizers = []string{"mine"} }),
			want: []string{`metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`}},
		{name: "qualified finalizer", svc: clusterIPService(func(s *corev1.Service) { s.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"} })},
		{name: "topology annotations agree",
			svc: clusterIPService(withAnnotation(corev1.AnnotationTopologyMode, "Auto"), withAnnotation(corev1.DeprecatedAnnotationTopologyAwareHints, "Auto"))},
		{name: "topology annotations disagree",
			svc:  clusterIPService(withAnnotation(corev1.AnnotationTopologyMode, "Auto"), withAnnotation(corev1.DeprecatedAnnotationTopologyAwareHints, "Disabled")),
			want: []string{`metadata.annotations[service.kubernetes.io/topology-mode]: Invalid value: "Auto": must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateService(tc.svc), tc.want) })
	}
}

func TestValidateServicePorts(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "no ports", svc: clusterIPService(withPorts()), want: []string{"spec.ports: Required value"}},
		{name: "no ports, headless", svc: headlessService(withPorts())},
		{name: "no ports, ExternalName", svc: externalNameService()},
		{name: "one unnamed port", svc: clusterIPService(withPorts(port("", 80)))},
		{name: "second of two ports unnamed", svc: clusterIPService(withPorts(port("http", 80), port("", 443))),
			want: []string{"spec.ports[1].name: Required value"}},
		{name: "both of two ports unnamed", svc: clusterIPService(withPorts(port("", 80), port("", 443))),
			want: []string{"spec.ports[0].name: Required value", "spec.ports[1].name: Required value"}},
		{name: "duplicate name", svc: clusterIPService(withPorts(port("http", 80), port("http", 8080))),
			want: []string{`spec.ports[1].name: Duplicate value: "http"`}},
		{name: "uppercase name", svc: clusterIPService(withPorts(port("HTTP", 80))),
			want: []string{`spec.ports[0].name: Invalid value: "HTTP": ` + dns1123LabelMsg}},
		{name: "port 0", svc: clusterIPService(withPorts(corev1.ServicePort{Port: 0, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)})),
			want: []string{"spec.ports[0].port: Invalid value: 0: " + portRangeMsg}},
		{name: "port 65536", svc: clusterIPService(withPorts(corev1.ServicePort{Port: 65536, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)})),
			want: []string{"spec.ports[0].port: Invalid value: 65536: " + portRangeMsg}},
		{name: "no protocol", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "" }),
			want: []string{"spec.ports[0].protocol: Required value"}},
		{name: "unknown protocol", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "ICMP" }),
			want: []string{`spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`}},
		{name: "UDP and SCTP", svc: clusterIPService(withPorts(
			corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			corev1.ServicePort{Name: "sig", Port: 2905, Protocol: corev1.ProtocolSCTP, TargetPort: intstr.FromInt32(2905)}))},
		{name: "targetPort out of range", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(70000) }),
			want: []string{"spec.ports[0].targetPort: Invalid value: 70000: " + portRangeMsg}},
		{name: "targetPort zero (not defaulted)", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(0) }),
			want: []string{"spec.ports[0].targetPort: Invalid value: 0: " + portRangeMsg}},
		{name: "named targetPort", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http-alt") })},
		{name: "named targetPort too long", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("abcdefghijklmnop") }),
			want: []string{`spec.ports[0].targetPort: Invalid value: "abcdefghijklmnop": ` + portNameLongMsg}},
		{name: "targetPort of unknown kind", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.IntOrString{Type: 7} }),
			want: []string{"spec.ports[0].targetPort: Internal error: unknown type: 7"}},
		{name: "headless service may map ports", svc: headlessService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("web") })},
		{name: "appProtocol", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].AppProtocol = ptr.To("kubernetes.io/h2c") })},
		{name: "bad appProtocol", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].AppProtocol = ptr.To("a b") }),
			want: []string{`spec.ports[0].appProtocol: Invalid value: "a b": ` + qualifiedNameMsg}},
		{name: "same port and protocol twice", svc: clusterIPService(withPorts(port("a", 80), port("b", 80))),
			want: []string{`spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`}},
		{name: "same port, other protocol", svc: clusterIPService(withPorts(port("tcp", 53),
			corev1.ServicePort{Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)}))},
		{name: "bad selector key", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"a b": "web"} }),
			want: []string{`spec.selector: Invalid value: "a b": ` + qualifiedNameMsg}},
		{name: "empty selector", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Selector = map[string]string{} })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateService(tc.svc), tc.want) })
	}
}

func TestValidateServiceTypes(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "no type", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Type = "" }),
			want: []string{"spec.type: Required value"}},
		{name: "unknown type", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Type = "Magic" }),
			want: []string{`spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`}},
		{name: "node port on a ClusterIP service", svc: clusterIPService(func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }),
			want: []string{"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"}},
		{name: "NodePort without a node port yet", svc: nodePortService(func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 0 })},
		{name: "NodePort, same node port twice", svc: nodePortService(withPorts(
			corev1.ServicePort{Name: "a", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
			corev1.ServicePort{Name: "b", Port: 81, NodePort: 30080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(81)})),
			want: []string{"spec.ports[1].nodePort: Duplicate value: 30080"}},
		{name: "NodePort, same node port for TCP and UDP", svc: nodePortService(withPorts(
			corev1.ServicePort{Name: "a", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			corev1.ServicePort{Name: "b", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)}))},
		{name: "headless NodePort", svc: headlessService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}), want: []string{`spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for NodePort services`}},
		{name: "headless LoadBalancer", svc: headlessService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			SetDefaults(s)
		}), want: []string{`spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for LoadBalancer services`}},
		{name: "LoadBalancer without allocateLoadBalancerNodePorts", svc: loadBalancerService(func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = nil }),
			want: []string{"allocateLoadBalancerNodePorts: Required value"}},
		{name: "LoadBalancer without node ports", svc: loadBalancerService(func(s *corev1.Service) {
			s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
			s.Spec.Ports[0].NodePort = 0
		})},
		{name: "allocateLoadBalancerNodePorts on a ClusterIP service", svc: clusterIPService(func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = ptr.To(true) }),
			want: []string{"spec.allocateLoadBalancerNodePorts: Forbidden: " + lbOnly}},
		{name: "ExternalName with a trailing dot", svc: externalNameService(func(s *corev1.Service) { s.Spec.ExternalName = "db.example.com." })},
		{name: "ExternalName with ports", svc: externalNameService(withPorts(port("pg", 5432)))},
		{name: "ExternalName without a name", svc: externalNameService(func(s *corev1.Service) { s.Spec.ExternalName = "" }),
			want: []string{"spec.externalName: Required value"}},
		{name: "ExternalName of only a dot", svc: externalNameService(func(s *corev1.Service) { s.Spec.ExternalName = "." }),
			want: []string{"spec.externalName: Required value"}},
		{name: "ExternalName not a DNS name", svc: externalNameService(func(s *corev1.Service) { s.Spec.ExternalName = "db_prod.example.com" }),
			want: []string{`spec.externalName: Invalid value: "db_prod.example.com": ` + dns1123SubdomainMsg}},
		{name: "ExternalName with a cluster IP", svc: externalNameService(withClusterIPs("10.96.0.10")),
			want: []string{"spec.clusterIPs: Forbidden: may not be set for ExternalName services"}},
		{name: "ExternalName headless", svc: externalNameService(withClusterIPs(corev1.ClusterIPNone)),
			want: []string{"spec.clusterIPs: Forbidden: may not be set for ExternalName services"}},
		{name: "ExternalName with IP families", svc: externalNameService(withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol)),
			want: []string{"spec.ipFamilies: Forbidden: may not be set for ExternalName services", "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services"}},
		{name: "ExternalName may carry an internal traffic policy", svc: externalNameService(func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateService(tc.svc), tc.want) })
	}
}

func TestValidateServiceClusterIPs(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "nothing allocated yet", svc: clusterIPService(withClusterIPs(), func(s *corev1.Service) {
			s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = nil, nil
		})},
		{name: "clusterIP without clusterIPs", svc: clusterIPService(func(s *corev1.Service) { s.Spec.ClusterIPs = nil }),
			want: []string{"spec.clusterIPs: Required value"}},
		{name: "clusterIPs[0] is not clusterIP", svc: clusterIPService(func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.11"} }),
			want: []string{`spec.clusterIPs: Invalid value: ["10.96.0.11"]: first value must match ` + "`clusterIP`"}},
		{name: "clusterIPs without clusterIP", svc: clusterIPService(func(s *corev1.Service) { s.Spec.ClusterIP = "" }),
			want: []string{`spec.clusterIPs: Invalid value: ["10.96.0.10"]: must be empty when ` + "`clusterIP`" + ` is not specified`}},
		{name: "not an IP", svc: clusterIPService(withClusterIPs("10.96.0.300")),
			want: []string{`spec.clusterIPs[0]: Invalid value: "10.96.0.300": ` + badIPMsg}},
		{name: "leading zeros", svc: clusterIPService(withClusterIPs("10.096.0.10")),
			want: []string{`spec.clusterIPs[0]: Invalid value: "10.096.0.10": must not have leading 0s`}},
		{name: "IPv4-mapped IPv6", svc: clusterIPService(withClusterIPs("::ffff:10.96.0.10"), withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol)),
			want: []string{`spec.clusterIPs[0]: Invalid value: "::ffff:10.96.0.10": must not be an IPv4-mapped IPv6 address`}},
		{name: "bad second IP stops the family checks", svc: clusterIPService(withClusterIPs("10.96.0.10", "nope"), withFamilies(corev1.IPFamilyPolicyRequireDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol)),
			want: []string{`spec.clusterIPs[1]: Invalid value: "nope": ` + badIPMsg}},
		{name: "None and an IP", svc: clusterIPService(withClusterIPs(corev1.ClusterIPNone, "10.96.0.10")),
			want: []string{`spec.clusterIPs: Invalid value: ["None","10.96.0.10"]: 'None' must be the first and only value`}},
		{name: "an IP and None", svc: clusterIPService(withClusterIPs("10.96.0.10", corev1.ClusterIPNone)),
			want: []string{`spec.clusterIPs[1]: Invalid value: "None": ` + badIPMsg}},
		{name: "three IPs", svc: clusterIPService(withClusterIPs("10.96.0.10", "fd00::a", "10.96.0.11"), withFamilies(corev1.IPFamilyPolicyRequireDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol)),
			want: []string{`spec.clusterIPs: Invalid value: ["10.96.0.10","fd00::a","10.96.0.11"]: may only hold up to 2 values`}},
		{name: "two IPv4 IPs", svc: clusterIPService(withClusterIPs("10.96.0.10", "10.96.0.11"), withFamilies(corev1.IPFamilyPolicyRequireDualStack)),
			want: []string{`spec.clusterIPs: Invalid value: ["10.96.0.10","10.96.0.11"]: may specify no more than one IP for each IP family`}},
		{name: "dual-stack, IPv6 first", svc: clusterIPService(withClusterIPs("fd00::a", "10.96.0.10"), withFamilies(corev1.IPFamilyPolicyPreferDualStack, corev1.IPv6Protocol, corev1.IPv4Protocol))},
		{name: "dual-stack IPs, one family given", svc: clusterIPService(withClusterIPs("10.96.0.10", "fd00::a"), withFamilies(corev1.IPFamilyPolicyPreferDualStack, corev1.IPv4Protocol))},
		{name: "SingleStack with two families is left to allocation", svc: clusterIPService(withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol, corev1.IPv6Protocol))},
		{name: "IPv4 IP, IPv6 family", svc: clusterIPService(withFamilies(corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol)),
			want: []string{`spec.clusterIPs[0]: Invalid value: "10.96.0.10": expected an IPv6 value as indicated by ` + "`ipFamilies[0]`"}},
		{name: "families swapped", svc: clusterIPService(withDualStack, withFamilies(corev1.IPFamilyPolicyRequireDualStack, corev1.IPv6Protocol, corev1.IPv4Protocol)),
			want: []string{
				`spec.clusterIPs[0]: Invalid value: "10.96.0.10": expected an IPv6 value as indicated by ` + "`ipFamilies[0]`",
				`spec.clusterIPs[1]: Invalid value: "fd00:10:96::a": expected an IPv4 value as indicated by ` + "`ipFamilies[1]`",
			}},
		{name: "unknown family", svc: clusterIPService(withFamilies(corev1.IPFamilyPolicySingleStack, "IPv5")),
			want: []string{`spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"`}},
		{name: "family twice", svc: clusterIPService(withFamilies(corev1.IPFamilyPolicyPreferDualStack, corev1.IPv4Protocol, corev1.IPv4Protocol)),
			want: []string{`spec.ipFamilies[1]: Duplicate value: "IPv4"`}},
		{name: "unknown policy", svc: clusterIPService(withFamilies("DualStack", corev1.IPv4Protocol)),
			want: []string{`spec.ipFamilyPolicy: Unsupported value: "DualStack": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"`}},
		{name: "headless with families of both kinds", svc: headlessService()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateService(tc.svc), tc.want) })
	}
}

func TestValidateServiceClusterIPsRelatedFieldsSkipsExternalName(t *testing.T) {
	svc := externalNameService(withClusterIPs("nope"), withFamilies("bad", "IPv5"))
	assertErrors(t, ValidateServiceClusterIPsRelatedFields(svc, nil), nil)
}

func TestValidateServiceAffinity(t *testing.T) {
	clientIP := func(timeout *int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: timeout}}
		}
	}
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "ClientIP, an hour", svc: clusterIPService(clientIP(ptr.To[int32](3600)))},
		{name: "ClientIP, a day", svc: clusterIPService(clientIP(ptr.To[int32](86400)))},
		{name: "ClientIP, a day and a second", svc: clusterIPService(clientIP(ptr.To[int32](86401))),
			want: []string{"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400"}},
		{name: "ClientIP, zero", svc: clusterIPService(clientIP(ptr.To[int32](0))),
			want: []string{"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400"}},
		{name: "ClientIP, no timeout", svc: clusterIPService(clientIP(nil)),
			want: []string{"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Required value: when session affinity type is ClientIP"}},
		{name: "ClientIP, no clientIP", svc: clusterIPService(func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}), want: []string{"spec.sessionAffinityConfig.clientIP: Required value: when session affinity type is ClientIP"}},
		{name: "ClientIP, no config", svc: clusterIPService(func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }),
			want: []string{"spec.sessionAffinityConfig: Required value: when session affinity type is ClientIP"}},
		{name: "None with a config", svc: clusterIPService(clientIP(ptr.To[int32](60)), func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityNone }),
			want: []string{"spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None"}},
		{name: "no affinity", svc: clusterIPService(func(s *corev1.Service) { s.Spec.SessionAffinity = "" }),
			want: []string{"spec.sessionAffinity: Required value"}},
		{name: "unknown affinity", svc: clusterIPService(func(s *corev1.Service) { s.Spec.SessionAffinity = "Sticky" }),
			want: []string{`spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateService(tc.svc), tc.want) })
	}
}

func TestValidateServiceExternalIPsAndSourceRanges(t *testing.T) {
	ranges := func(r ...string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = r }
	}
	const rangesKey = corev1.AnnotationLoadBalancerSourceRangesKey
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "external IPs", svc: clusterIPService(withExternalIPs("203.0.113.7", "2001:db8::7"))},
		{name: "external IP without a traffic policy", svc: clusterIPService(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"203.0.113.7"} }),
			want: []string{"spec.externalTrafficPolicy: Required value"}},
		{name: "external IP not an IP", svc: clusterIPService(withExternalIPs("gateway")),
			want: []string{`spec.externalIPs[0]: Invalid value: "gateway": ` + badIPMsg}},
		{name: "external IP with leading zeros", svc: clusterIPService(withExternalIPs("203.0.113.007")),
			want: []string{`spec.externalIPs[0]: Invalid value: "203.0.113.007": must not have leading 0s`}},
		{name: "special external IPs", svc: clusterIPService(withExternalIPs("0.0.0.0", "127.0.0.1", "169.254.1.1", "224.0.0.1", "::1")),
			want: []string{
				`spec.externalIPs[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)`,
				`spec.externalIPs[1]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`,
				`spec.externalIPs[2]: Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)`,
				`spec.externalIPs[3]: Invalid value: "224.0.0.1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)`,
				`spec.externalIPs[4]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)`,
			}},
		{name: "source ranges, padded", svc: loadBalancerService(ranges("10.0.0.0/8", " 192.168.0.0/16 ", "2001:db8::/32"))},
		{name: "source ranges on a ClusterIP service", svc: clusterIPService(ranges("10.0.0.0/8")),
			want: []string{"spec.LoadBalancerSourceRanges: Forbidden: " + lbOnly}},
		{name: "source range with host bits", svc: loadBalancerService(ranges("10.0.0.1/8")),
			want: []string{`spec.LoadBalancerSourceRanges[0]: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`}},
		{name: "blank source range", svc: loadBalancerService(ranges("10.0.0.0/8", "   ")),
			want: []string{`spec.LoadBalancerSourceRanges[1]: Invalid value: "": ` + badCIDRMsg}},
		{name: "source range a hostname", svc: loadBalancerService(ranges("office.example.com")),
			want: []string{`spec.LoadBalancerSourceRanges[0]: Invalid value: "office.example.com": ` + badCIDRMsg}},
		{name: "annotation", svc: loadBalancerService(withAnnotation(rangesKey, " 10.0.0.0/8, 192.168.0.0/16 "))},
		{name: "annotation, blank", svc: loadBalancerService(withAnnotation(rangesKey, "  "))},
		{name: "annotation, bad CIDRs", svc: loadBalancerService(withAnnotation(rangesKey, "10.0.0.0/8,10.0.0.1/8,office")),
			want: []string{
				`metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`,
				`metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: "office": ` + badCIDRMsg,
			}},
		{name: "annotation on a ClusterIP service, even empty", svc: clusterIPService(withAnnotation(rangesKey, "")),
			want: []string{"metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Forbidden: " + lbOnly}},
		{name: "the field wins over the annotation", svc: loadBalancerService(ranges("10.0.0.0/8"), withAnnotation(rangesKey, "bad"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateService(tc.svc), tc.want) })
	}
}

func TestValidateServiceTrafficPolicies(t *testing.T) {
	local := func(hc int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = hc
		}
	}
	td := func(v string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.TrafficDistribution = &v }
	}
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{name: "ETP on a ClusterIP service", svc: clusterIPService(func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster }),
			want: []string{`spec.externalTrafficPolicy: Invalid value: "Cluster": may only be set for externally-accessible services`}},
		{name: "NodePort without ETP", svc: nodePortService(func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = "" }),
			want: []string{"spec.externalTrafficPolicy: Required value"}},
		{name: "NodePort, unknown ETP", svc: nodePortService(func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = "Global" }),
			want: []string{`spec.externalTrafficPolicy: Unsupported value: "Global": supported values: "Cluster", "Local"`}},
		{name: "NodePort, Local, no health check port", svc: nodePortService(local(0))},
		{name: "NodePort with a health check port", svc: nodePortService(local(30100)),
			want: []string{"spec.healthCheckNodePort: Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"}},
		{name: "LoadBalancer, Local", svc: loadBalancerService(local(30100))},
		{name: "LoadBalancer, Local, no health check port", svc: loadBalancerService(local(0)),
			want: []string{"spec.healthCheckNodePort: Required value"}},
		{name: "LoadBalancer, Local, negative health check port", svc: loadBalancerService(local(-1)),
			want: []string{"spec.healthCheckNodePort: Invalid value: -1: " + portRangeMsg}},
		{name: "no ITP", svc: clusterIPService(func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = nil }),
			want: []string{"spec.internalTrafficPolicy: Required value"}},
		{name: "ITP Local", svc: clusterIPService(func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
		})},
		{name: "unknown ITP", svc: clusterIPService(func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To[corev1.ServiceInternalTrafficPolicy]("Node")
		}),
			want: []string{`spec.internalTrafficPolicy: Unsupported value: "Node": supported values: "Cluster", "Local"`}},
		{name: "PreferClose", svc: clusterIPService(td("PreferClose"))},
		{name: "PreferSameZone", svc: clusterIPService(td("PreferSameZone"))},
		{name: "PreferSameNode", svc: clusterIPService(td("PreferSameNode"))},
		{name: "unknown traffic distribution", svc: clusterIPService(td("Random")),
			want: []string{`spec.trafficDistribution: Unsupported value: "Random": supported values: "PreferClose", "PreferSameZone", "PreferSameNode"`}},
		{name: "load-balancer class", svc: loadBalancerService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/internal") })},
		{name: "bad load-balancer class", svc: loadBalancerService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("a b") }),
			want: []string{`spec.loadBalancerClass: Invalid value: "a b": ` + qualifiedNameMsg}},
		{name: "load-balancer class on a NodePort service", svc: nodePortService(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/internal") }),
			want: []string{"spec.loadBalancerClass: Forbidden: " + lbOnly}},
		{name: "publishNotReadyAddresses", svc: headlessService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assertErrors(t, ValidateService(tc.svc), tc.want) })
	}
}

// Several errors at once come out in upstream's order.
func TestValidateServiceErrorOrder(t *testing.T) {
	svc := loadBalancerService(func(s *corev1.Service) {
		s.Name = "Web"
		s.Spec.Ports = append(s.Spec.Ports, port("", 80))
		s.Spec.SessionAffinity = "Sticky"
		s.Spec.AllocateLoadBalancerNodePorts = nil
		s.Spec.InternalTrafficPolicy = nil
	})
	assertErrors(t, ValidateService(svc), []string{
		`metadata.name: Invalid value: "Web": ` + dns1123LabelMsg,
		"spec.ports[1].name: Required value",
		`spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"`,
		fmt.Sprintf(`spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":%d,"TargetPort":0,"NodePort":0}`, 80),
		"allocateLoadBalancerNodePorts: Required value",
		"spec.internalTrafficPolicy: Required value",
	})
}
