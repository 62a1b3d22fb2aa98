package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestNodeAPIServerEnv: until berth serves the kubernetes Service, the node agent gives every
// container KUBERNETES_SERVICE_HOST/PORT (and the rest of that Service's variables) pointing
// at the API server of its kubeconfig, the loopback address `berth up` gives it replaced by
// an address of the machine, and a container reaches the API server there.
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
	host, port := got["KUBERNETES_SERVICE_HOST"], strconv.Itoa(c.port)
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || !isMachineAddress(ip) {
		t.Fatalf("KUBERNETES_SERVICE_HOST=%q, want an address of this machine other than loopback; env:\n%s", host, logs)
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
	// A TCP connection (busybox's nc; its wget has no TLS here): rest.InClusterConfig
	// then speaks TLS to the serving certificate, which holds the machine's addresses.
	if !strings.Contains(logs, "\nREACHABLE") {
		t.Errorf("the container could not connect to the API server at %s:%s:\n%s", host, port, logs)
	}
}

// isMachineAddress reports whether ip is one of this machine's addresses.
func isMachineAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
