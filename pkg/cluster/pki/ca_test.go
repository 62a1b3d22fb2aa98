package pki

import (
	"crypto"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnsureCAIsStableAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first, err := EnsureCA(dir, "berth-ca")
	if err != nil {
		t.Fatalf("first EnsureCA: %v", err)
	}
	// A second start, even asking for another name, must keep the CA.
	second, err := EnsureCA(dir, "other-name")
	if err != nil {
		t.Fatalf("second EnsureCA: %v", err)
	}
	if !first.Cert.Equal(second.Cert) {
		t.Errorf("CA certificate changed across restarts")
	}
	if string(first.CertPEM) != string(second.CertPEM) {
		t.Errorf("CertPEM changed across restarts")
	}
	if !second.Cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(second.Key.Public()) {
		t.Errorf("loaded key does not match the loaded certificate")
	}

	c := first.Cert
	if !c.IsCA || !c.BasicConstraintsValid || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("not a usable CA: IsCA=%v BasicConstraintsValid=%v KeyUsage=%b", c.IsCA, c.BasicConstraintsValid, c.KeyUsage)
	}
	if c.Subject.CommonName != "berth-ca" {
		t.Errorf("CommonName = %q, want berth-ca", c.Subject.CommonName)
	}
	if len(c.SubjectKeyId) == 0 {
		t.Errorf("CA has no SubjectKeyId")
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("CA is not self-signed: %v", err)
	}
	if got, want := c.NotAfter.Sub(c.NotBefore), caValidity; got < want || got > want+time.Hour {
		t.Errorf("validity = %s, want about %s", got, want)
	}
	if !c.NotBefore.Before(time.Now()) {
		t.Errorf("NotBefore %s is not in the past", c.NotBefore)
	}

	for path, want := range map[string]os.FileMode{
		dir:                            0o700 | os.ModeDir,
		filepath.Join(dir, caKeyFile):  0o600,
		filepath.Join(dir, caCertFile): 0o644,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("mode of %s = %s, want %s", path, fi.Mode(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %d entries, want ca.crt and ca.key only (no temporary files)", len(entries))
	}
}

func TestEnsureCAOnDamagedDir(t *testing.T) {
	other, _, err := newCA("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leafPEM, leafKeyPEM, err := other.IssueClient("someone", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKeyPEM, err := newCA("other2", time.Now())
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		files   map[string][]byte // written before EnsureCA
		wantErr string            // "" means a CA is returned
	}{
		{
			name:  "orphan key is replaced",
			files: map[string][]byte{caKeyFile: otherKeyPEM},
		},
		{
			name:    "certificate without key is an error",
			files:   map[string][]byte{caCertFile: other.CertPEM},
			wantErr: "its key cannot be read",
		},
		{
			name:    "garbage certificate",
			files:   map[string][]byte{caCertFile: []byte("not pem"), caKeyFile: otherKeyPEM},
			wantErr: "parsing certificate and key",
		},
		{
			name:    "key of another CA",
			files:   map[string][]byte{caCertFile: other.CertPEM, caKeyFile: otherKeyPEM},
			wantErr: "parsing certificate and key",
		},
		{
			name:    "leaf certificate is not a CA",
			files:   map[string][]byte{caCertFile: leafPEM, caKeyFile: leafKeyPEM},
			wantErr: "is not a CA",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ca, err := EnsureCA(dir, "berth-ca")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("EnsureCA error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureCA: %v", err)
			}
			again, err := EnsureCA(dir, "berth-ca")
			if err != nil || !again.Cert.Equal(ca.Cert) {
				t.Fatalf("reloading the new CA: err=%v, same=%v", err, err == nil && again.Cert.Equal(ca.Cert))
			}
		})
	}
}

func TestParseCARejectsExpired(t *testing.T) {
	ca, keyPEM, err := newCA("old", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseCA(ca.CertPEM, keyPEM, time.Now()); err != nil {
		t.Fatalf("parseCA now: %v", err)
	}
	_, err = parseCA(ca.CertPEM, keyPEM, time.Now().Add(caValidity+time.Hour))
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("parseCA after expiry: err = %v, want expired", err)
	}
}

func TestSubjectKeyIDDiffersPerKey(t *testing.T) {
	a, _, err := newCA("a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := newCA("b", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Cert.SubjectKeyId) != 20 || string(a.Cert.SubjectKeyId) == string(b.Cert.SubjectKeyId) {
		t.Errorf("SubjectKeyIds %x and %x: want 20 bytes each, different", a.Cert.SubjectKeyId, b.Cert.SubjectKeyId)
	}
}
