package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// testCA returns a fresh CA in a temporary directory.
func testCA(t *testing.T, name string) *CA {
	t.Helper()
	ca, err := EnsureCA(t.TempDir(), name)
	if err != nil {
		t.Fatalf("EnsureCA: %v", err)
	}
	return ca
}

// parseIssued checks that the pair is accepted by client-go and crypto/tls
// and returns the certificate.
func parseIssued(t *testing.T, certPEM, keyPEM []byte) *x509.Certificate {
	t.Helper()
	if _, err := keyutil.ParsePrivateKeyPEM(keyPEM); err != nil {
		t.Fatalf("keyutil.ParsePrivateKeyPEM: %v", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("tls.X509KeyPair: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func verifyOpts(ca *CA, usage x509.ExtKeyUsage, name string) x509.VerifyOptions {
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: name}
}

func TestIssueClient(t *testing.T) {
	ca := testCA(t, "berth-ca")
	other := testCA(t, "other-ca")
	certPEM, keyPEM, err := ca.IssueClient("system:node:n1", []string{"system:nodes", "team-a"}, 24*time.Hour)
	if err != nil {
		t.Fatalf("IssueClient: %v", err)
	}
	cert := parseIssued(t, certPEM, keyPEM)

	if cert.Subject.CommonName != "system:node:n1" {
		t.Errorf("CN = %q", cert.Subject.CommonName)
	}
	// DER sorts a SET OF, so the order of groups is not kept.
	if got := slices.Sorted(slices.Values(cert.Subject.Organization)); !slices.Equal(got, []string{"system:nodes", "team-a"}) {
		t.Errorf("O = %q, want system:nodes and team-a", got)
	}
	if !bytes.Equal(cert.AuthorityKeyId, ca.Cert.SubjectKeyId) || len(cert.SubjectKeyId) == 0 {
		t.Errorf("key IDs: AuthorityKeyId=%x (CA %x), SubjectKeyId=%x", cert.AuthorityKeyId, ca.Cert.SubjectKeyId, cert.SubjectKeyId)
	}
	if cert.IsCA {
		t.Errorf("client certificate is a CA")
	}
	if cert.SerialNumber.Sign() <= 0 || cert.SerialNumber.BitLen() < 64 {
		t.Errorf("serial %s is not a large positive random number", cert.SerialNumber)
	}
	if !cert.NotBefore.Before(time.Now().Add(-time.Minute)) {
		t.Errorf("NotBefore %s is not backdated for clock skew", cert.NotBefore)
	}

	tests := []struct {
		name   string
		opts   x509.VerifyOptions
		wantOK bool
	}{
		{"client auth under its CA", verifyOpts(ca, x509.ExtKeyUsageClientAuth, ""), true},
		{"server auth is refused", verifyOpts(ca, x509.ExtKeyUsageServerAuth, ""), false},
		{"another CA is refused", verifyOpts(other, x509.ExtKeyUsageClientAuth, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cert.Verify(tt.opts)
			if (err == nil) != tt.wantOK {
				t.Errorf("Verify error = %v, want ok=%v", err, tt.wantOK)
			}
		})
	}

	againPEM, _, err := ca.IssueClient("system:node:n1", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if parseCertPEM(t, againPEM).SerialNumber.Cmp(cert.SerialNumber) == 0 {
		t.Errorf("two issued certificates share a serial number")
	}
}

func parseCertPEM(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("no PEM block in %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestIssueServing(t *testing.T) {
	ca := testCA(t, "berth-ca")
	dnsNames := []string{"kubernetes", "kubernetes.default.svc", "localhost"}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1"), net.ParseIP("::1")}
	certPEM, keyPEM, err := ca.IssueServing("apiserver", dnsNames, ips, 24*time.Hour)
	if err != nil {
		t.Fatalf("IssueServing: %v", err)
	}
	cert := parseIssued(t, certPEM, keyPEM)

	tests := []struct {
		host   string
		usage  x509.ExtKeyUsage
		wantOK bool
	}{
		{"kubernetes", x509.ExtKeyUsageServerAuth, true},
		{"KUBERNETES.default.svc", x509.ExtKeyUsageServerAuth, true},
		{"localhost", x509.ExtKeyUsageServerAuth, true},
		{"127.0.0.1", x509.ExtKeyUsageServerAuth, true},
		{"10.96.0.1", x509.ExtKeyUsageServerAuth, true},
		{"::1", x509.ExtKeyUsageServerAuth, true},
		{"apiserver", x509.ExtKeyUsageServerAuth, false}, // the CN is not a name
		{"example.com", x509.ExtKeyUsageServerAuth, false},
		{"10.96.0.2", x509.ExtKeyUsageServerAuth, false},
		{"kubernetes", x509.ExtKeyUsageClientAuth, false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			_, err := cert.Verify(verifyOpts(ca, tt.usage, tt.host))
			if (err == nil) != tt.wantOK {
				t.Errorf("Verify(%s) error = %v, want ok=%v", tt.host, err, tt.wantOK)
			}
		})
	}
}

func TestIssueRejectsBadRequests(t *testing.T) {
	ca := testCA(t, "berth-ca")
	localhost := []string{"localhost"}
	tests := []struct {
		name    string
		issue   func() ([]byte, []byte, error)
		wantErr string
	}{
		{"serving without names", func() ([]byte, []byte, error) { return ca.IssueServing("x", nil, nil, time.Hour) }, "no DNS names or IP addresses"},
		{"serving without CN", func() ([]byte, []byte, error) { return ca.IssueServing("", localhost, nil, time.Hour) }, "common name is empty"},
		{"client without CN", func() ([]byte, []byte, error) { return ca.IssueClient("", []string{"g"}, time.Hour) }, "common name is empty"},
		{"zero validity", func() ([]byte, []byte, error) { return ca.IssueClient("u", nil, 0) }, "not positive"},
		{"negative validity", func() ([]byte, []byte, error) { return ca.IssueServing("x", localhost, nil, -time.Hour) }, "not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tt.issue()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestIssueStopsAtCAExpiry(t *testing.T) {
	ca := testCA(t, "berth-ca")
	certPEM, _, err := ca.IssueClient("u", nil, 2*caValidity)
	if err != nil {
		t.Fatal(err)
	}
	cert := parseCertPEM(t, certPEM)
	if !cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("NotAfter = %s, want the CA's %s", cert.NotAfter, ca.Cert.NotAfter)
	}
}
