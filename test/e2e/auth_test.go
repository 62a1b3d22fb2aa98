package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAuthentication: without a client certificate, or with one from another CA, the API
// answers 401 while the health checks answer 200; a certificate from `berth kubeconfig` works
// in system:masters and is forbidden outside it.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	caPEM, err := os.ReadFile(filepath.Join(c.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s/pki/ca.crt", c.dataDir)
	}
	get := func(client *http.Client, path string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url()+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// The CA must also verify the serving certificate for 127.0.0.1.
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	code, body := get(anonymous, "/api/v1/pods")
	if code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/pods without a certificate: %d, want 401\n%s", code, body)
	}
	var status metav1.Status
	if err := json.Unmarshal([]byte(body), &status); err != nil || status.Kind != "Status" || status.Reason != metav1.StatusReasonUnauthorized || status.Code != 401 {
		t.Errorf("the 401's body is not a Status with reason Unauthorized (%v):\n%s", err, body)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := get(anonymous, path); code != http.StatusOK || body != "ok" {
			t.Errorf("GET %s without a certificate: %d %q, want 200 ok", path, code, body)
		}
	}

	stranger := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{foreignClientCert(t)}}}}
	if code, body := get(stranger, "/api/v1/pods"); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/pods with a certificate of another CA: %d, want 401\n%s", code, body)
	}

	for _, tc := range []struct {
		user, group string
		wantCode    int
		wantStderr  string
	}{
		{"e2e-admin", "system:masters", 0, ""},
		{"jane", "developers", 1, `Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"`},
	} {
		var stdout, stderr strings.Builder
		cmd := execCommand(berthBin, "kubeconfig", "--data-dir", c.dataDir, "--user", tc.user, "--group", tc.group)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		exit, err := runCmd(ctx, cmd)
		cancel()
		if err != nil || exit != 0 {
			t.Fatalf("berth kubeconfig --user %s: exit %d, %v\n%s", tc.user, exit, err, stderr.String())
		}
		path := filepath.Join(t.TempDir(), tc.user+".kubeconfig")
		if err := os.WriteFile(path, []byte(stdout.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runKubectl(t, kubectlBin, path, nil, "", "get", "pods", "-n", "default")
		if r.code != tc.wantCode || !strings.Contains(r.stderr, tc.wantStderr) {
			t.Errorf("kubectl get pods as %s in %s: want exit code %d and %q:\n%s", tc.user, tc.group, tc.wantCode, tc.wantStderr, r)
		}
	}
}

// foreignClientCert is a client certificate for "admin" in system:masters, signed by a CA the
// cluster has never seen.
func foreignClientCert(t *testing.T) tls.Certificate {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "berth-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
