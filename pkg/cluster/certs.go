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
	// frontProxyCAFile is the front proxy's CA; frontProxyClientCert and frontProxyClientKey
	// are what the aggregator presents to aggregated API servers.
	frontProxyCAFile                          string
	frontProxyClientCert, frontProxyClientKey string
}

// The front proxy's PKI, named as kubeadm names it: a CA of its own (aggregated API servers
// trust any certificate of it from an allowed name to say who a request is for, so it must
// not be the cluster CA, which signs every user's), and the aggregator's client certificate.
const (
	frontProxyCAName     = "front-proxy-ca"
	frontProxyClientName = "front-proxy-client"
)

// ensureControlPlaneCerts makes (once) the cluster CA and the API server's serving
// certificate, for every name and address a client on this machine might use, and for
// the kubernetes Service's cluster IP of each range in serviceIPRanges (the
// --service-cluster-ip-range flag, "" its default), where in-cluster clients reach it; and
// the front proxy's CA and the aggregator's client certificate from it.
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
	frontProxyCA, err := pki.EnsureNamedCA(dir, frontProxyCAName, frontProxyCAName)
	if err != nil {
		return nil, fmt.Errorf("front proxy CA: %w", err)
	}
	proxyCert, proxyKey, err := pki.EnsureClient(dir, frontProxyClientName, frontProxyCA, frontProxyClientName, nil)
	if err != nil {
		return nil, fmt.Errorf("front proxy client certificate: %w", err)
	}
	return &controlPlaneCerts{ca: ca, caFile: filepath.Join(dir, "ca.crt"), servingCert: cert, servingKey: key,
		kubeletClientCert: kubeletCert, kubeletClientKey: kubeletKey,
		frontProxyCAFile: filepath.Join(dir, frontProxyCAName+".crt"), frontProxyClientCert: proxyCert, frontProxyClientKey: proxyKey}, nil
}

// FrontProxyCAFile and FrontProxyClientFiles are where berth up keeps the front-proxy CA
// and the aggregator's client certificate and key in a data dir.
func FrontProxyCAFile(dataDir string) string {
	return filepath.Join(PKIDir(dataDir), frontProxyCAName+".crt")
}

func FrontProxyClientFiles(dataDir string) (certFile, keyFile string) {
	return filepath.Join(PKIDir(dataDir), frontProxyClientName+".crt"), filepath.Join(PKIDir(dataDir), frontProxyClientName+".key")
}

// frontProxy is the API server's front-proxy configuration: c as given, or, when it names
// neither a CA nor a client certificate, berth's own, with kubeadm's headers.
func (certs *controlPlaneCerts) frontProxy(c apiserver.FrontProxyConfig) apiserver.FrontProxyConfig {
	if c.RequestHeaderClientCAFile == "" && c.ProxyClientCertFile == "" {
		c.RequestHeaderClientCAFile = certs.frontProxyCAFile
		c.ProxyClientCertFile, c.ProxyClientKeyFile = certs.frontProxyClientCert, certs.frontProxyClientKey
		if len(c.RequestHeaderAllowedNames) == 0 {
			c.RequestHeaderAllowedNames = []string{frontProxyClientName}
		}
	}
	if len(c.RequestHeaderUsernameHeaders) == 0 {
		c.RequestHeaderUsernameHeaders = []string{"X-Remote-User"}
	}
	if len(c.RequestHeaderGroupHeaders) == 0 {
		c.RequestHeaderGroupHeaders = []string{"X-Remote-Group"}
	}
	if len(c.RequestHeaderExtraHeaderPrefixes) == 0 {
		c.RequestHeaderExtraHeaderPrefixes = []string{"X-Remote-Extra-"}
	}
	return c
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
