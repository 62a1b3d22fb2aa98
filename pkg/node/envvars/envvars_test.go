package envvars

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// service builds a Service of namespace ns at cluster IP ip.
func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func port(name string, n int32, proto v1.Protocol) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: n, Protocol: proto}
}

// kubernetesVars are the variables of default/kubernetes at 10.96.0.1:443.
var kubernetesVars = map[string]string{
	"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
	"KUBERNETES_SERVICE_PORT":       "443",
	"KUBERNETES_SERVICE_PORT_HTTPS": "443",
	"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
	"KUBERNETES_PORT_443_TCP_PORT":  "443",
	"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
}

func with(base map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

func TestForServices(t *testing.T) {
	master := service("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP))
	// The upstream conformance test's fooservice: one port, 8765 to 8080.
	foo := service("ns", "fooservice", "10.96.5.6", port("", 8765, ""))
	multi := service("ns", "my-db", "10.96.7.8", port("", 5432, v1.ProtocolTCP), port("metrics-port", 9187, v1.ProtocolUDP))
	headless := service("ns", "headless", v1.ClusterIPNone, port("", 80, v1.ProtocolTCP))
	external := service("ns", "external", "", port("", 80, v1.ProtocolTCP))
	v6 := service("ns", "v6", "fd00::10", port("", 80, v1.ProtocolSCTP))
	other := service("other", "elsewhere", "10.96.9.9", port("", 80, v1.ProtocolTCP))
	// A Service of the pod's namespace named kubernetes: it wins over default's.
	shadow := service("ns", "kubernetes", "10.96.3.3", port("", 6443, v1.ProtocolTCP))
	fooVars := map[string]string{
		"FOOSERVICE_SERVICE_HOST":        "10.96.5.6",
		"FOOSERVICE_SERVICE_PORT":        "8765",
		"FOOSERVICE_PORT":                "tcp://10.96.5.6:8765",
		"FOOSERVICE_PORT_8765_TCP":       "tcp://10.96.5.6:8765",
		"FOOSERVICE_PORT_8765_TCP_PROTO": "tcp",
		"FOOSERVICE_PORT_8765_TCP_PORT":  "8765",
		"FOOSERVICE_PORT_8765_TCP_ADDR":  "10.96.5.6",
	}
	tests := []struct {
		name      string
		services  []*v1.Service
		namespace string
		links     bool
		want      map[string]string
	}{
		{name: "no services", want: map[string]string{}},
		{name: "the master service alone", services: []*v1.Service{master}, namespace: "ns", links: true, want: kubernetesVars},
		{name: "the namespace's services and the master's; not other namespaces', not headless or external ones",
			services:  []*v1.Service{master, foo, headless, external, other},
			namespace: "ns", links: true, want: with(kubernetesVars, fooVars)},
		{name: "enableServiceLinks false: the master service only", services: []*v1.Service{master, foo}, namespace: "ns", want: kubernetesVars},
		{name: "named ports and protocols", services: []*v1.Service{multi}, namespace: "ns", links: true, want: map[string]string{
			"MY_DB_SERVICE_HOST":              "10.96.7.8",
			"MY_DB_SERVICE_PORT":              "5432",
			"MY_DB_SERVICE_PORT_METRICS_PORT": "9187",
			"MY_DB_PORT":                      "tcp://10.96.7.8:5432",
			"MY_DB_PORT_5432_TCP":             "tcp://10.96.7.8:5432",
			"MY_DB_PORT_5432_TCP_PROTO":       "tcp",
			"MY_DB_PORT_5432_TCP_PORT":        "5432",
			"MY_DB_PORT_5432_TCP_ADDR":        "10.96.7.8",
			"MY_DB_PORT_9187_UDP":             "udp://10.96.7.8:9187",
			"MY_DB_PORT_9187_UDP_PROTO":       "udp",
			"MY_DB_PORT_9187_UDP_PORT":        "9187",
			"MY_DB_PORT_9187_UDP_ADDR":        "10.96.7.8",
		}},
		{name: "an IPv6 cluster IP", services: []*v1.Service{v6}, namespace: "ns", links: true, want: map[string]string{
			"V6_SERVICE_HOST":       "fd00::10",
			"V6_SERVICE_PORT":       "80",
			"V6_PORT":               "sctp://[fd00::10]:80",
			"V6_PORT_80_SCTP":       "sctp://[fd00::10]:80",
			"V6_PORT_80_SCTP_PROTO": "sctp",
			"V6_PORT_80_SCTP_PORT":  "80",
			"V6_PORT_80_SCTP_ADDR":  "fd00::10",
		}},
		{name: "the namespace's kubernetes beats default's, in either order", services: []*v1.Service{master, shadow}, namespace: "ns", links: true,
			want: map[string]string{
				"KUBERNETES_SERVICE_HOST":        "10.96.3.3",
				"KUBERNETES_SERVICE_PORT":        "6443",
				"KUBERNETES_PORT":                "tcp://10.96.3.3:6443",
				"KUBERNETES_PORT_6443_TCP":       "tcp://10.96.3.3:6443",
				"KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
				"KUBERNETES_PORT_6443_TCP_PORT":  "6443",
				"KUBERNETES_PORT_6443_TCP_ADDR":  "10.96.3.3",
			}},
		{name: "without links the namespace's kubernetes does not count", services: []*v1.Service{shadow, master}, namespace: "ns", want: kubernetesVars},
		{name: "a pod of the default namespace", services: []*v1.Service{master, service("default", "web", "10.96.1.1", port("", 80, ""))}, namespace: "default", links: true,
			want: with(kubernetesVars, map[string]string{
				"WEB_SERVICE_HOST": "10.96.1.1", "WEB_SERVICE_PORT": "80", "WEB_PORT": "tcp://10.96.1.1:80",
				"WEB_PORT_80_TCP": "tcp://10.96.1.1:80", "WEB_PORT_80_TCP_PROTO": "tcp", "WEB_PORT_80_TCP_PORT": "80", "WEB_PORT_80_TCP_ADDR": "10.96.1.1",
			})},
		{name: "a service with no ports says nothing (and does not crash)", services: []*v1.Service{service("ns", "empty", "10.96.2.2")}, namespace: "ns", links: true, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ForServices(tt.services, tt.namespace, tt.links)
			if !maps.Equal(got, tt.want) {
				t.Errorf("ForServices() =\n%v\nwant\n%v", got, tt.want)
			}
			if tt.name == "the namespace's kubernetes beats default's, in either order" {
				reversed := []*v1.Service{tt.services[1], tt.services[0]}
				if got := ForServices(reversed, tt.namespace, tt.links); !maps.Equal(got, tt.want) {
					t.Errorf("reversed: ForServices() =\n%v\nwant\n%v", got, tt.want)
				}
			}
		})
	}
}
