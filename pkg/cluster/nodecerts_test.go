package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func leaf(t *testing.T, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf
}

func TestNodeCertificates(t *testing.T) {
	dir := t.TempDir()
	certs, err := ensureControlPlaneCerts(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(certs.ca.Cert)

	client := leaf(t, certs.kubeletClientCert, certs.kubeletClientKey)
	if client.Subject.CommonName != KubeletClientUser || len(client.Subject.Organization) != 0 {
		t.Errorf("client certificate for %q in %q, want %q in no group", client.Subject.CommonName, client.Subject.Organization, KubeletClientUser)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the API server's node client certificate: %v", err)
	}

	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.1.2.3")}
	certFile, keyFile, err := EnsureNodeServing(dir, "node-a", ips)
	if err != nil {
		t.Fatal(err)
	}
	serving := leaf(t, certFile, keyFile)
	for _, name := range []string{"node-a", "127.0.0.1", "10.1.2.3"} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("node serving certificate for %s: %v", name, err)
		}
	}
	if filepath.Base(certFile) != "node-node-a.crt" {
		t.Errorf("certificate file %s", certFile)
	}

	// Again: the same pair is reused; with a new address, a new one is issued.
	before, _ := os.ReadFile(certFile)
	if _, _, err := EnsureNodeServing(dir, "node-a", ips); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(certFile); string(after) != string(before) {
		t.Error("a fitting certificate was replaced")
	}
	if _, _, err := EnsureNodeServing(dir, "node-a", []net.IP{net.ParseIP("10.9.9.9")}); err != nil {
		t.Fatal(err)
	}
	if got := leaf(t, certFile, keyFile); len(got.IPAddresses) != 1 || !got.IPAddresses[0].Equal(net.ParseIP("10.9.9.9")) {
		t.Errorf("addresses %v after a change of address", got.IPAddresses)
	}

	if _, _, err := EnsureNodeServing(dir, "", ips); err == nil {
		t.Error("no node name: want an error")
	}
	// Without the cluster CA no certificate is made (nor a CA no API server trusts).
	other := t.TempDir()
	if _, _, err := EnsureNodeServing(other, "node-b", ips); err == nil {
		t.Error("no cluster CA: want an error")
	}
	if _, err := os.Stat(filepath.Join(other, "ca.crt")); err == nil {
		t.Error("a CA was made")
	}
}

// TestServingCertificateCoversKubernetesService: in-cluster clients dial the kubernetes
// Service's cluster IP, the first of each service range, and verify the API server there.
func TestServingCertificateCoversKubernetesService(t *testing.T) {
	for ranges, want := range map[string][]string{
		"":                           {"10.96.0.1"},
		"10.128.7.0/24":              {"10.128.7.1"},
		"10.43.0.0/16,fd00:43::/108": {"10.43.0.1", "fd00:43::1"},
	} {
		certs, err := ensureControlPlaneCerts(t.TempDir(), ranges)
		if err != nil {
			t.Fatal(err)
		}
		cert := leaf(t, certs.servingCert, certs.servingKey)
		for _, ip := range want {
			if err := cert.VerifyHostname(ip); err != nil {
				t.Errorf("range %q: the serving certificate does not cover %s: %v", ranges, ip, err)
			}
		}
	}
	if _, err := ensureControlPlaneCerts(t.TempDir(), "10.0.0.0/33"); err == nil || !strings.Contains(err.Error(), "--service-cluster-ip-range") {
		t.Errorf("a bad range: %v, want an error naming --service-cluster-ip-range", err)
	}
}
