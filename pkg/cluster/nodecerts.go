package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

const (
	// caCommonName names the cluster CA when it is first made.
	caCommonName = "berth-ca"

	// kubeletClientName is the file name (in the PKI dir) of the client certificate the API
	// server presents to node agents when it proxies pods/log (kubeadm's
	// apiserver-kubelet-client.crt).
	kubeletClientName = "apiserver-kubelet-client"
	// KubeletClientUser is that certificate's user. Node agents accept any certificate of the
	// cluster CA for now; when they authorize requests, this is the user to allow.
	KubeletClientUser = "kube-apiserver-kubelet-client"
)

// ensureKubeletClientCert makes (once) the API server's client certificate for node agents. It
// carries no group: unlike kubeadm's (kubeadm:cluster-admins), it is no admin credential for the
// API server itself, since berth grants that only to system:masters.
func ensureKubeletClientCert(dir string, ca *pki.CA) (certFile, keyFile string, err error) {
	certFile, keyFile, err = pki.EnsureClient(dir, kubeletClientName, ca, KubeletClientUser, nil)
	if err != nil {
		return "", "", fmt.Errorf("API server's node agent client certificate: %w", err)
	}
	return certFile, keyFile, nil
}

// EnsureNodeServing makes sure pkiDir holds a serving certificate for the node API (:10250) of
// nodeName, signed by the cluster CA, for the DNS name nodeName and the addresses ips: the API
// server dials a node at the address in its status (InternalIP) and checks it against the cluster
// CA. The pair is node-<nodeName>.crt and .key; one that still fits is reused. The cluster CA
// (certificate and key) must be in pkiDir already: a CA made here would be trusted by no API
// server.
func EnsureNodeServing(pkiDir, nodeName string, ips []net.IP) (certFile, keyFile string, err error) {
	if nodeName == "" {
		return "", "", fmt.Errorf("node serving certificate: empty node name")
	}
	if _, err := os.Stat(filepath.Join(pkiDir, "ca.crt")); err != nil {
		return "", "", fmt.Errorf("node serving certificate: no cluster CA: %w", err)
	}
	ca, err := pki.EnsureCA(pkiDir, caCommonName)
	if err != nil {
		return "", "", fmt.Errorf("cluster CA: %w", err)
	}
	certFile, keyFile, err = pki.EnsureServing(pkiDir, "node-"+nodeName, ca, []string{nodeName}, ips)
	if err != nil {
		return "", "", fmt.Errorf("serving certificate of node %s: %w", nodeName, err)
	}
	return certFile, keyFile, nil
}
