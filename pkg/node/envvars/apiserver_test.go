package envvars

import (
	"context"
	"maps"
	"net"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAPIServerService(t *testing.T) {
	machine := []net.IP{net.ParseIP("fe80::1"), net.ParseIP("192.0.2.10"), net.ParseIP("192.0.2.11")}
	tests := []struct {
		name     string
		server   string
		nodeIP   net.IP
		hostIPs  []net.IP
		wantHost string
		wantPort int32
		wantErr  bool
	}{
		{name: "an address a pod reaches", server: "https://192.0.2.7:6443", nodeIP: net.ParseIP("192.0.2.10"), hostIPs: machine, wantHost: "192.0.2.7", wantPort: 6443},
		{name: "loopback becomes the node's InternalIP", server: "https://127.0.0.1:6443", nodeIP: net.ParseIP("192.0.2.11"), hostIPs: machine, wantHost: "192.0.2.11", wantPort: 6443},
		{name: "localhost too", server: "https://localhost:7443", nodeIP: net.ParseIP("192.0.2.11"), hostIPs: machine, wantHost: "192.0.2.11", wantPort: 7443},
		{name: "IPv6 loopback", server: "https://[::1]:6443", nodeIP: net.ParseIP("2001:db8::5"), wantHost: "2001:db8::5", wantPort: 6443},
		{name: "a loopback InternalIP: the machine's first global address", server: "https://127.0.0.1:6443", nodeIP: net.IPv4(127, 0, 0, 1), hostIPs: machine, wantHost: "192.0.2.10", wantPort: 6443},
		{name: "no InternalIP", server: "https://127.0.0.1:6443", hostIPs: machine, wantHost: "192.0.2.10", wantPort: 6443},
		{name: "nothing better than loopback", server: "https://127.0.0.1:6443", wantHost: "127.0.0.1", wantPort: 6443},
		{name: "a host name stays", server: "https://api.example.test:6443", nodeIP: net.ParseIP("192.0.2.10"), wantHost: "api.example.test", wantPort: 6443},
		{name: "no scheme", server: "192.0.2.7:6443", wantHost: "192.0.2.7", wantPort: 6443},
		{name: "https's default port", server: "https://192.0.2.7", wantHost: "192.0.2.7", wantPort: 443},
		{name: "no host", server: "https://:6443", wantErr: true},
		{name: "a bad port", server: "https://192.0.2.7:99999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := APIServerService(tt.server, tt.nodeIP, tt.hostIPs)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", svc.Spec)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if svc.Namespace != "default" || svc.Name != "kubernetes" || svc.Spec.ClusterIP != tt.wantHost ||
				len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != tt.wantPort || svc.Spec.Ports[0].Name != "https" {
				t.Errorf("got %s/%s %+v", svc.Namespace, svc.Name, svc.Spec)
			}
		})
	}
}

// TestServicesStandIn: with no kubernetes Service in default, containers get the stand-in's
// variables (all of the kubernetes Service's), and the real Service once there is one.
func TestServicesStandIn(t *testing.T) {
	client := fake.NewClientset(service("ns", "fooservice", "10.96.5.6", port("", 8765, "")))
	s := NewServices(client)
	run(t, s)
	waitFor(t, "the services to sync", s.HasSynced)
	standIn, err := APIServerService("https://127.0.0.1:6443", net.ParseIP("192.0.2.10"), nil)
	if err != nil {
		t.Fatal(err)
	}
	envFor := s.EnvForWithStandIn(standIn, false)
	ctx := context.Background()
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST":        "192.0.2.10",
		"KUBERNETES_SERVICE_PORT":        "6443",
		"KUBERNETES_SERVICE_PORT_HTTPS":  "6443",
		"KUBERNETES_PORT":                "tcp://192.0.2.10:6443",
		"KUBERNETES_PORT_6443_TCP":       "tcp://192.0.2.10:6443",
		"KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_6443_TCP_PORT":  "6443",
		"KUBERNETES_PORT_6443_TCP_ADDR":  "192.0.2.10",
	}
	got, err := envFor(ctx, apiPod("ns", ptr(false)))
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("enableServiceLinks false: %v, %v; want\n%v", got, err, want)
	}
	if got, _ := envFor(ctx, apiPod("ns", nil)); got["FOOSERVICE_SERVICE_HOST"] != "10.96.5.6" || got["KUBERNETES_SERVICE_HOST"] != "192.0.2.10" {
		t.Errorf("with links: %v", got)
	}
	if got, _ := s.EnvFor(ctx, apiPod("ns", ptr(false))); len(got) != 0 {
		t.Errorf("EnvFor without a stand-in: %v", got)
	}

	// The cluster's own kubernetes Service wins once it exists.
	if _, err := client.CoreV1().Services("default").Create(ctx, service("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the kubernetes Service", func() bool {
		got, _ := envFor(ctx, apiPod("ns", ptr(false)))
		return maps.Equal(got, kubernetesVars)
	})
}
