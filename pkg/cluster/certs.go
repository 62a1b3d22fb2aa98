package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/berth-cluster/berth/pkg/apiserver"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

type controlPlaneCerts struct {
	ca                      *pki.CA
	caFile                  string
	servingCert, servingKey string
	// kubeletClientCert and kubeletClientKey are what the API server presents to node agents.
	kubeletClientCert, kubeletClientKey string
}

// ensureControlPlaneCerts makes (once) the cluster CA and the API server's serving
// certificate, for every name and address a client on this machine might use, and for
// the kubernetes Service's cluster IP of each range in serviceIPRanges (the
// --service-cluster-ip-range flag, "" its default), where in-cluster clients reach it.
func ensureControlPlaneCerts(dir, serviceIPRanges string) (*controlPlaneCerts, error) {
	ca, err := pki.EnsureCA(dir, caCommonName)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	names := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if host, err := os.Hostname(); err == nil && host != "" {
		names = append(names, host)
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	ips = append(ips, hostIPs()...)
	kubernetesIPs, err := apiserver.KubernetesServiceIPs(serviceIPRanges)
	if err != nil {
		return nil, err
	}
	ips = append(ips, kubernetesIPs...)
	cert, key, err := pki.EnsureServing(dir, "apiserver", ca, names, ips)
	if err != nil {
		return nil, fmt.Errorf("API server certificate: %w", err)
	}
	kubeletCert, kubeletKey, err := ensureKubeletClientCert(dir, ca)
	if err != nil {
		return nil, err
	}
	return &controlPlaneCerts{ca: ca, caFile: filepath.Join(dir, "ca.crt"), servingCert: cert, servingKey: key,
		kubeletClientCert: kubeletCert, kubeletClientKey: kubeletKey}, nil
}

// hostIPs are the machine's global unicast addresses.
func hostIPs() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			ips = append(ips, n.IP)
		}
	}
	return ips
}
