package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// TestNodeAPIServerEnv: with enableServiceLinks off, a container still gets the kubernetes
// Service's variables (KUBERNETES_SERVICE_HOST/PORT and the docker-link ones), as from the
// kubelet: its cluster IP and port 443; and it reaches the API server there, through berth
// up's service proxy. (A node agent whose cluster has no kubernetes Service points them at
// the API server of its kubeconfig: TestNodeServiceEnv in test/integration/nodetest.)
func TestNodeAPIServerEnv(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	// No token volume: this is about the address alone.
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: apienv}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  enableServiceLinks: false
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "env | grep ^KUBERNETES_ | sort; if nc -w 5 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT </dev/null >/dev/null; then echo REACHABLE; else echo UNREACHABLE; fi; sleep 3600"]
`, image), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "apienv", "Running")
	var logs string
	eventually(t, podTimeout, "the container to try the API server", func() bool {
		logs = c.must(t, "logs", "apienv", "-n", ns)
		return strings.Contains(logs, "REACHABLE") // or UNREACHABLE
	})
	got := map[string]string{}
	for _, line := range strings.Split(logs, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	host, port := got["KUBERNETES_SERVICE_HOST"], "443"
	if want := c.jsonpath(t, "default", "svc/kubernetes", "{.spec.clusterIP}"); host != want {
		t.Fatalf("KUBERNETES_SERVICE_HOST=%q, want the kubernetes Service's cluster IP %s; env:\n%s", host, want, logs)
	}
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST":                host,
		"KUBERNETES_SERVICE_PORT":                port,
		"KUBERNETES_SERVICE_PORT_HTTPS":          port,
		"KUBERNETES_PORT":                        "tcp://" + net.JoinHostPort(host, port),
		"KUBERNETES_PORT_" + port + "_TCP":       "tcp://" + net.JoinHostPort(host, port),
		"KUBERNETES_PORT_" + port + "_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_" + port + "_TCP_PORT":  port,
		"KUBERNETES_PORT_" + port + "_TCP_ADDR":  host,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	// A TCP connection (busybox's nc; its wget has no TLS here): rest.InClusterConfig then
	// speaks TLS to the serving certificate, which holds the Service's IP.
	if !strings.Contains(logs, "\nREACHABLE") {
		t.Errorf("the container could not connect to the API server at %s:%s:\n%s", host, port, logs)
	}
}
