package kubeconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// credentials is what Build needs, issued by one CA.
type credentials struct {
	ca              *pki.CA
	certPEM, keyPEM []byte
}

func newCredentials(t *testing.T, caName, user string, groups []string) credentials {
	t.Helper()
	ca, err := pki.EnsureCA(t.TempDir(), caName)
	if err != nil {
		t.Fatalf("EnsureCA: %v", err)
	}
	certPEM, keyPEM, err := ca.IssueClient(user, groups, time.Hour)
	if err != nil {
		t.Fatalf("IssueClient: %v", err)
	}
	return credentials{ca: ca, certPEM: certPEM, keyPEM: keyPEM}
}

// restConfig loads a kubeconfig the way kubectl does and returns the
// client configuration of its current context.
func restConfig(t *testing.T, kubeconfig []byte) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatalf("clientcmd.Load: %v", err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatalf("ClientConfig: %v", err)
	}
	return rc
}

func TestBuild(t *testing.T) {
	creds := newCredentials(t, "berth-ca", "admin", []string{"system:masters"})
	data, err := Build("berth", "https://127.0.0.1:6443", creds.ca.CertPEM, creds.certPEM, creds.keyPEM, "admin")
	if err != nil {
		t.Fatalf("Build: %v", err)
	}

	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatalf("clientcmd.Load: %v", err)
	}
	if cfg.CurrentContext != "berth" {
		t.Errorf("current-context = %q, want berth", cfg.CurrentContext)
	}
	if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 {
		t.Errorf("got %d clusters, %d users, %d contexts; want one of each", len(cfg.Clusters), len(cfg.AuthInfos), len(cfg.Contexts))
	}
	if ctx := cfg.Contexts["berth"]; ctx == nil || ctx.Cluster != "berth" || ctx.AuthInfo != "admin" {
		t.Errorf("context berth = %+v, want cluster berth and user admin", ctx)
	}
	// Embedded data, not file paths: the file must stand on its own.
	for _, key := range []string{"certificate-authority-data:", "client-certificate-data:", "client-key-data:"} {
		if !bytes.Contains(data, []byte(key)) {
			t.Errorf("kubeconfig lacks %s", key)
		}
	}

	rc := restConfig(t, data)
	if rc.Host != "https://127.0.0.1:6443" {
		t.Errorf("Host = %q", rc.Host)
	}
	tlsCfg := rc.TLSClientConfig
	if !bytes.Equal(tlsCfg.CAData, creds.ca.CertPEM) || !bytes.Equal(tlsCfg.CertData, creds.certPEM) || !bytes.Equal(tlsCfg.KeyData, creds.keyPEM) {
		t.Errorf("rest.Config TLS data does not match what was built in")
	}
	if tlsCfg.CAFile != "" || tlsCfg.CertFile != "" || tlsCfg.KeyFile != "" || tlsCfg.Insecure {
		t.Errorf("rest.Config refers to files or skips verification: %+v", tlsCfg)
	}
}

func TestBuildRejectsIncompleteInput(t *testing.T) {
	c := newCredentials(t, "berth-ca", "admin", nil)
	ca := c.ca.CertPEM
	tests := []struct {
		name, cluster, server string
		ca, cert, key         []byte
		user, wantErr         string
	}{
		{"no cluster name", "", "https://h:6443", ca, c.certPEM, c.keyPEM, "admin", "cluster name is empty"},
		{"no user name", "berth", "https://h:6443", ca, c.certPEM, c.keyPEM, "", "user name is empty"},
		{"no CA", "berth", "https://h:6443", nil, c.certPEM, c.keyPEM, "admin", "no CA certificate"},
		{"no key", "berth", "https://h:6443", ca, c.certPEM, nil, "admin", "no client certificate and key"},
		{"no server", "berth", "", ca, c.certPEM, c.keyPEM, "admin", "not an https:// URL"},
		{"plain http", "berth", "http://h:8080", ca, c.certPEM, c.keyPEM, "admin", "not an https:// URL"},
		{"host only", "berth", "h:6443", ca, c.certPEM, c.keyPEM, "admin", "not an https:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.cluster, tt.server, tt.ca, tt.cert, tt.key, tt.user)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Build error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".kube")
	path := filepath.Join(dir, "config")
	for i, content := range []string{"first", "second"} {
		if i == 1 {
			// An existing, more open file must end up private too.
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := Write(path, []byte(content)); err != nil {
			t.Fatalf("Write %q: %v", content, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("file holds %q, %v; want %q", got, err, content)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode() != 0o600 {
			t.Errorf("mode = %v, %v; want 0600", fi.Mode(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d entries, want only config (no temporary files)", len(entries))
	}
}

// TestClientReachesServer is the whole chain: a TLS server with a serving
// certificate from the CA that demands client certificates from the same CA,
// and a client built from a kubeconfig the way client-go builds one.
func TestClientReachesServer(t *testing.T) {
	trusted := newCredentials(t, "berth-ca", "system:node:n1", []string{"system:nodes"})
	stranger := newCredentials(t, "stranger-ca", "mallory", []string{"system:masters"})

	servingCert, servingKey, err := trusted.ca.IssueServing("apiserver", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(servingCert, servingKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(trusted.ca.Cert)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := r.TLS.PeerCertificates[0]
		fmt.Fprintf(w, "%s %s", peer.Subject.CommonName, strings.Join(peer.Subject.Organization, ","))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
	}
	// The rejected handshakes below are expected; keep them out of the log.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()

	tests := []struct {
		name     string
		ca       []byte // the CA the client trusts
		identity credentials
		want     string // response body; "" means the request must fail
	}{
		{"trusted client", trusted.ca.CertPEM, trusted, "system:node:n1 system:nodes"},
		{"client certificate from another CA", trusted.ca.CertPEM, stranger, ""},
		{"client trusting another CA", stranger.ca.CertPEM, trusted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc, err := Build("berth", srv.URL, tt.ca, tt.identity.certPEM, tt.identity.keyPEM, "user")
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			rc := restConfig(t, kc)
			rt, err := rest.TransportFor(rc)
			if err != nil {
				t.Fatalf("rest.TransportFor: %v", err)
			}
			client := &http.Client{Transport: rt, Timeout: 10 * time.Second}

			resp, err := client.Get(srv.URL + "/api")
			if tt.want == "" {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("request succeeded with status %s, want a TLS failure", resp.Status)
				}
				if !strings.Contains(err.Error(), "certificate") {
					t.Fatalf("GET error = %v, want a certificate failure", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || string(body) != tt.want {
				t.Errorf("got %s %q, want 200 %q", resp.Status, body, tt.want)
			}
		})
	}
}
