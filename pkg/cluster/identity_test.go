package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// testAdmin makes a CA in a PKI dir and an admin config with a certificate from it.
func testAdmin(t *testing.T) (dataDir string, ca *pki.CA, admin *rest.Config) {
	t.Helper()
	dataDir = t.TempDir()
	ca, err := pki.EnsureCA(PKIDir(dataDir), caCommonName)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient(AdminIdentity.User, AdminIdentity.Groups, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return dataDir, ca, &rest.Config{Host: "https://127.0.0.1:6443", QPS: 50,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM, CertData: certPEM, KeyData: keyPEM}}
}

// subject is the certificate a config presents, verified as a client certificate of ca.
func subject(t *testing.T, config *rest.Config, ca *pki.CA) *x509.Certificate {
	t.Helper()
	data := config.CertData
	if config.CertFile != "" {
		var err error
		if data, err = os.ReadFile(config.CertFile); err != nil {
			t.Fatal(err)
		}
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate of %s does not verify as a client of the cluster CA: %v", cert.Subject.CommonName, err)
	}
	return cert
}

func TestComponentConfigCarriesItsIdentity(t *testing.T) {
	dataDir, ca, admin := testAdmin(t)
	cp := New(Config{DataDir: dataDir, ComponentIdentities: true})
	cp.admin = admin
	for _, c := range []struct {
		identity Identity
		user     string
		groups   []string
		certName string
	}{
		{NodeIdentity("node-1"), "system:node:node-1", []string{"system:nodes"}, "client-system-node-node-1"},
		{SchedulerIdentity, "system:kube-scheduler", nil, "client-system-kube-scheduler"},
		{ControllerManagerIdentity, "system:kube-controller-manager", nil, "client-system-kube-controller-manager"},
	} {
		config, err := cp.componentConfig(Component{Name: "x", Identity: c.identity}, ca)
		if err != nil {
			t.Fatal(err)
		}
		cert := subject(t, config, ca)
		if cert.Subject.CommonName != c.user || !slices.Equal(cert.Subject.Organization, c.groups) {
			t.Errorf("%s: certificate of %q in %v, want %q in %v", c.user, cert.Subject.CommonName, cert.Subject.Organization, c.user, c.groups)
		}
		if config.CertFile != filepath.Join(PKIDir(dataDir), c.certName+".crt") || config.CertData != nil || config.KeyData != nil {
			t.Errorf("%s: config presents %q (data %t), want the file %s.crt only", c.user, config.CertFile, config.CertData != nil, c.certName)
		}
		if config.Host != admin.Host || config.QPS != admin.QPS || string(config.CAData) != string(admin.CAData) {
			t.Errorf("%s: config lost the admin's server settings: %+v", c.user, config)
		}
		// A restart reuses the certificate.
		again, err := cp.componentConfig(Component{Name: "x", Identity: c.identity}, ca)
		if err != nil {
			t.Fatal(err)
		}
		if subject(t, again, ca).SerialNumber.Cmp(cert.SerialNumber) != 0 {
			t.Errorf("%s: a second config issued a new certificate", c.user)
		}
	}
	if admin.CertFile != "" {
		t.Error("the admin config was changed")
	}

	// Without an identity, or with the control plane running components as the admin, the
	// component gets the admin's certificate.
	config, err := cp.componentConfig(Component{Name: "plain"}, ca)
	if err != nil {
		t.Fatal(err)
	}
	if cert := subject(t, config, ca); cert.Subject.CommonName != "admin" {
		t.Errorf("a component without an identity runs as %q", cert.Subject.CommonName)
	}
	cp.cfg.ComponentIdentities = false
	config, err = cp.componentConfig(Component{Name: "node", Identity: NodeIdentity("node-1")}, ca)
	if err != nil {
		t.Fatal(err)
	}
	if cert := subject(t, config, ca); cert.Subject.CommonName != "admin" || !slices.Equal(cert.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("with ComponentIdentities off a node runs as %q %v", cert.Subject.CommonName, cert.Subject.Organization)
	}
}

func TestIdentityCertNameIsAPlainFileName(t *testing.T) {
	for user, want := range map[string]string{
		"system:node:a.example.com": "client-system-node-a.example.com",
		"system:kube-scheduler":     "client-system-kube-scheduler",
		"../x/y":                    "client-..-x-y",
	} {
		if got := (Identity{User: user}).certName(); got != want {
			t.Errorf("certName(%q) = %q, want %q", user, got, want)
		}
	}
}
