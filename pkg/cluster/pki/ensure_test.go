package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writePair(t *testing.T, dir, name string, certPEM, keyPEM []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEnsureServing(t *testing.T) {
	ca := testCA(t, "berth-ca")
	other := testCA(t, "other-ca")
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	names := []string{"localhost", "kubernetes"}

	tests := []struct {
		name string
		// prepare fills dir before EnsureServing runs.
		prepare     func(t *testing.T, dir string)
		dnsNames    []string
		ips         []net.IP
		wantReissue bool
	}{
		{
			name:        "nothing on disk",
			prepare:     func(t *testing.T, dir string) {},
			dnsNames:    names,
			ips:         loopback,
			wantReissue: true,
		},
		{
			name:     "same request reuses",
			dnsNames: names,
			ips:      loopback,
		},
		{
			name:     "fewer names reuse",
			dnsNames: []string{"LOCALHOST"},
		},
		{
			name:        "an IP not covered reissues",
			dnsNames:    names,
			ips:         []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("192.0.2.10")},
			wantReissue: true,
		},
		{
			name:        "a DNS name not covered reissues",
			dnsNames:    []string{"localhost", "berth.example"},
			ips:         loopback,
			wantReissue: true,
		},
		{
			name: "expiring within 30 days reissues",
			prepare: func(t *testing.T, dir string) {
				certPEM, keyPEM, err := ca.IssueServing("apiserver", names, loopback, 29*24*time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				writePair(t, dir, "apiserver", certPEM, keyPEM)
			},
			dnsNames:    names,
			ips:         loopback,
			wantReissue: true,
		},
		{
			name: "signed by another CA reissues",
			prepare: func(t *testing.T, dir string) {
				certPEM, keyPEM, err := other.IssueServing("apiserver", names, loopback, leafValidity)
				if err != nil {
					t.Fatal(err)
				}
				writePair(t, dir, "apiserver", certPEM, keyPEM)
			},
			dnsNames:    names,
			ips:         loopback,
			wantReissue: true,
		},
		{
			name: "a client certificate reissues",
			prepare: func(t *testing.T, dir string) {
				certPEM, keyPEM, err := ca.IssueClient("apiserver", nil, leafValidity)
				if err != nil {
					t.Fatal(err)
				}
				writePair(t, dir, "apiserver", certPEM, keyPEM)
			},
			dnsNames:    names,
			wantReissue: true,
		},
		{
			name: "a key that does not match reissues",
			prepare: func(t *testing.T, dir string) {
				certPEM, _, err := ca.IssueServing("apiserver", names, loopback, leafValidity)
				if err != nil {
					t.Fatal(err)
				}
				_, keyPEM, err := ca.IssueServing("apiserver", names, loopback, leafValidity)
				if err != nil {
					t.Fatal(err)
				}
				writePair(t, dir, "apiserver", certPEM, keyPEM)
			},
			dnsNames:    names,
			ips:         loopback,
			wantReissue: true,
		},
		{
			name:        "garbage on disk reissues",
			prepare:     func(t *testing.T, dir string) { writePair(t, dir, "apiserver", []byte("x"), []byte("y")) },
			dnsNames:    names,
			wantReissue: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.prepare != nil {
				tt.prepare(t, dir)
			} else {
				// Start from a pair issued for names and loopback.
				if _, _, err := EnsureServing(dir, "apiserver", ca, names, loopback); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt"))

			certFile, keyFile, err := EnsureServing(dir, "apiserver", ca, tt.dnsNames, tt.ips)
			if err != nil {
				t.Fatalf("EnsureServing: %v", err)
			}
			if certFile != filepath.Join(dir, "apiserver.crt") || keyFile != filepath.Join(dir, "apiserver.key") {
				t.Errorf("files = %s, %s", certFile, keyFile)
			}
			after := readFile(t, certFile)
			if reissued := !bytes.Equal(before, after); reissued != tt.wantReissue {
				t.Errorf("reissued = %v, want %v", reissued, tt.wantReissue)
			}

			// Whatever happened, the result must serve every requested name.
			cert := parseIssued(t, after, readFile(t, keyFile))
			for _, host := range append(append([]string{}, tt.dnsNames...), ipStrings(tt.ips)...) {
				if _, err := cert.Verify(verifyOpts(ca, x509.ExtKeyUsageServerAuth, host)); err != nil {
					t.Errorf("Verify(%s): %v", host, err)
				}
			}
			if cert.NotAfter.Before(time.Now().Add(renewBefore)) {
				t.Errorf("NotAfter %s is within the renewal window", cert.NotAfter)
			}
		})
	}
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func TestEnsureClient(t *testing.T) {
	ca := testCA(t, "berth-ca")
	tests := []struct {
		name        string
		commonName  string
		groups      []string
		wantReissue bool
	}{
		{"same identity reuses", "admin", []string{"system:masters", "ops"}, false},
		{"groups in another order reuse", "admin", []string{"ops", "system:masters"}, false},
		{"another user reissues", "root", []string{"system:masters", "ops"}, true},
		{"a group less reissues", "admin", []string{"system:masters"}, true},
		{"a group more reissues", "admin", []string{"system:masters", "ops", "dev"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			certFile, keyFile, err := EnsureClient(dir, "admin", ca, "admin", []string{"system:masters", "ops"})
			if err != nil {
				t.Fatalf("first EnsureClient: %v", err)
			}
			before := readFile(t, certFile)
			if fi, err := os.Stat(keyFile); err != nil || fi.Mode() != 0o600 {
				t.Errorf("key file mode: %v, %v; want 0600", fi.Mode(), err)
			}

			if _, _, err := EnsureClient(dir, "admin", ca, tt.commonName, tt.groups); err != nil {
				t.Fatalf("second EnsureClient: %v", err)
			}
			after := readFile(t, certFile)
			if reissued := !bytes.Equal(before, after); reissued != tt.wantReissue {
				t.Errorf("reissued = %v, want %v", reissued, tt.wantReissue)
			}
			cert := parseIssued(t, after, readFile(t, keyFile))
			if err := identifiesUser(cert, tt.commonName, tt.groups); err != nil {
				t.Errorf("certificate on disk %v", err)
			}
			if _, err := cert.Verify(verifyOpts(ca, x509.ExtKeyUsageClientAuth, "")); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

func TestEnsureRejectsPathNames(t *testing.T) {
	ca := testCA(t, "berth-ca")
	dir := t.TempDir()
	for _, name := range []string{"", ".", "..", "../x", "a/b"} {
		_, _, err := EnsureClient(dir, name, ca, "u", nil)
		if err == nil || !strings.Contains(err.Error(), "not a plain file name") {
			t.Errorf("EnsureClient(name %q) error = %v, want a name error", name, err)
		}
	}
}
