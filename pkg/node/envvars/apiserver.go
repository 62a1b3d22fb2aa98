package envvars

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// APIServerService is the stand-in for the default namespace's kubernetes Service while the
// cluster has none (berth's API server serves no Services yet): its "cluster IP" is the API
// server's host as server (the node's kubeconfig URL) names it, and its one port, https, the
// API server's port, so that a pod's KUBERNETES_SERVICE_HOST/PORT and
// rest.InClusterConfig reach the API server directly. A loopback host, which a pod in its
// own network namespace cannot reach, becomes the node's InternalIP, or, when that is
// loopback too (a single-machine cluster), the machine's first global address: berth's API
// server listens on every address and its serving certificate holds the machine's.
func APIServerService(server string, nodeIP net.IP, hostIPs []net.IP) (*v1.Service, error) {
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's URL %q: %w", server, err)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, fmt.Errorf("the API server's URL %q names no host", server)
	}
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("the API server's URL %q has an invalid port", server)
	}
	if isLoopback(host) {
		host = reachableAddress(host, nodeIP, hostIPs)
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: masterService},
		Spec: v1.ServiceSpec{
			ClusterIP: host,
			Ports:     []v1.ServicePort{{Name: "https", Port: int32(n), Protocol: v1.ProtocolTCP}},
		},
	}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// reachableAddress is the node's InternalIP if a pod can reach it, else the first global
// address of the machine, else host unchanged.
func reachableAddress(host string, nodeIP net.IP, hostIPs []net.IP) string {
	if nodeIP != nil && !nodeIP.IsLoopback() && !nodeIP.IsUnspecified() {
		return nodeIP.String()
	}
	for _, ip := range hostIPs {
		if ip.IsGlobalUnicast() {
			return ip.String()
		}
	}
	return host
}
