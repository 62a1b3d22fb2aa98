package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestNodeAPIAuthz: the node API authorizes as the kubelet does. A certificate of the cluster
// CA for jane (in developers) that calls the node API directly gets 403 in the kubelet's words
// for container logs, exec, run, the stats summary, metrics, pods and the node's logs; without
// a certificate, 401; health stays public. The admin's certificate (system:masters) is allowed
// directly, and through the API server (whose kubelet client the API server allows) kubectl
// logs, exec and get --raw .../proxy/stats/summary keep working, while jane is refused there by
// the API server itself. TestNodeStreams and TestNodeStatsAndMetrics cover the rest of the
// proxied paths (attach, port-forward, metrics, pods).
func TestNodeAPIAuthz(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: %s, command: ["sh", "-c", "echo hello from talker; sleep 3600"]}
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "talker", "Running")

	caPEM, err := os.ReadFile(filepath.Join(c.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no certificate in the cluster's ca.crt")
	}
	janeConfig := userKubeconfig(t, c, "jane", "developers")
	client := func(kubeconfig string) *http.Client {
		tlsConfig := &tls.Config{RootCAs: roots}
		if kubeconfig != "" {
			tlsConfig.Certificates = []tls.Certificate{kubeconfigCertificate(t, kubeconfig)}
		}
		tr := &http.Transport{TLSClientConfig: tlsConfig}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	jane, admin, anonymous := client(janeConfig), client(c.kubeconfig()), client("")
	call := func(cl *http.Client, method, path string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("https://127.0.0.1:%d%s", n.port, path), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s on the node API: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	logs := "/containerLogs/" + ns + "/talker/c"
	exec := "/exec/" + ns + "/talker/c?command=true&output=1"
	for _, tt := range []struct {
		method, path string
		verb, sub    string
	}{
		{"GET", logs, "get", "[proxy]"},
		{"POST", exec, "create", "[proxy]"},
		{"GET", exec, "get", "[proxy]"},
		{"POST", "/run/" + ns + "/talker/c?cmd=true", "create", "[proxy]"},
		{"POST", "/portForward/" + ns + "/talker", "create", "[proxy]"},
		{"GET", "/stats/summary", "get", "[stats]"},
		{"GET", "/metrics", "get", "[metrics]"},
		{"GET", "/pods", "get", "[pods proxy]"},
		{"GET", "/logs/", "get", "[log]"},
	} {
		want := fmt.Sprintf("Forbidden (user=jane, verb=%s, resource=nodes, subresource(s)=%s)\n", tt.verb, tt.sub)
		if code, body := call(jane, tt.method, tt.path); code != http.StatusForbidden || body != want {
			t.Errorf("%s %s as jane: %d %q, want 403 %q", tt.method, tt.path, code, body, want)
		}
		if code, body := call(anonymous, tt.method, tt.path); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a certificate: %d %q, want 401", tt.method, tt.path, code, body)
		}
	}
	for _, cl := range []*http.Client{jane, anonymous} {
		if code, body := call(cl, "GET", "/healthz"); code != http.StatusOK || body != "ok" {
			t.Errorf("GET /healthz: %d %q, want 200 ok", code, body)
		}
	}

	// system:masters may use the node API directly.
	if code, body := call(admin, "GET", logs); code != http.StatusOK || body != "hello from talker\n" {
		t.Errorf("GET %s as the admin: %d %q", logs, code, body)
	}
	if code, body := call(admin, "GET", "/stats/summary"); code != http.StatusOK || !strings.Contains(body, `"nodeName":"`+n.name+`"`) {
		t.Errorf("GET /stats/summary as the admin: %d %.200q", code, body)
	}

	// Through the API server, whose kubelet client the API server allows nodes/*.
	if out := c.must(t, "logs", "talker", "-n", ns); out != "hello from talker\n" {
		t.Errorf("kubectl logs said %q", out)
	}
	if out := c.must(t, "exec", "talker", "-n", ns, "--", "echo", "exec works"); out != "exec works\n" {
		t.Errorf("kubectl exec said %q", out)
	}
	if raw := c.must(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/stats/summary"); !strings.Contains(raw, `"nodeName":"`+n.name+`"`) {
		t.Errorf("the summary through nodes/proxy does not name the node: %.200s", raw)
	}
	// What the node asked the API server, asked with kubectl.
	for user, want := range map[string]string{"jane": "false", "e2e-admin": "true"} {
		groups := map[string]string{"jane": "developers", "e2e-admin": "system:masters"}[user]
		review := fmt.Sprintf(`{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": %q, "groups": [%q],
  "resourceAttributes": {"verb": "get", "resource": "nodes", "subresource": "proxy", "name": %q}}}`, user, groups, n.name)
		if got := c.mustIn(t, review, "create", "-f", "-", "-o", "jsonpath={.status.allowed}"); got != want {
			t.Errorf("a review of %s using nodes/%s/proxy: allowed=%s, want %s", user, n.name, got, want)
		}
	}
	// jane is refused by the API server before any node sees her.
	if r := runKubectl(t, kubectlBin, janeConfig, nil, "", "logs", "talker", "-n", ns); r.code == 0 ||
		!strings.Contains(r.stderr, `User "jane" cannot get resource "pods"`) {
		t.Errorf("kubectl logs as jane: %s", r)
	}
}

// userKubeconfig writes `berth kubeconfig --user user --group group`'s output to a file.
func userKubeconfig(t *testing.T, c *cluster, user, group string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd := execCommand(berthBin, "kubeconfig", "--data-dir", c.dataDir, "--user", user, "--group", group)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if exit, err := runCmd(ctx, cmd); err != nil || exit != 0 {
		t.Fatalf("berth kubeconfig --user %s: exit %d, %v\n%s", user, exit, err, stderr.String())
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := os.WriteFile(path, []byte(stdout.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubeconfigCertificate is the client certificate of a kubeconfig's current context.
func kubeconfigCertificate(t *testing.T, path string) tls.Certificate {
	t.Helper()
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, ok := config.Contexts[config.CurrentContext]
	if !ok {
		t.Fatalf("%s has no current context", path)
	}
	user, ok := config.AuthInfos[ctx.AuthInfo]
	if !ok || len(user.ClientCertificateData) == 0 || len(user.ClientKeyData) == 0 {
		t.Fatalf("%s: user %q has no embedded client certificate", path, ctx.AuthInfo)
	}
	cert, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cert
}
