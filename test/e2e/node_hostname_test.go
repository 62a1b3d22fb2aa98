package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestNodeHostnameOverride: spec.hostnameOverride is the pod's hostname and the name its
// /etc/hosts gives the pod's IP, with no domain even beside hostname and subdomain, as in
// upstream's "Override hostname of Pod" tests (which read `hostname` and `hostname -f`).
func TestNodeHostnameOverride(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	pods := []struct{ name, spec, want string }{
		{"dotted-override", "hostnameOverride: override.example.host", "override.example.host"},
		{"all-three", "hostname: custom-host\n  subdomain: t\n  hostnameOverride: override-host", "override-host"},
		// Without the override, for contrast: the pod's FQDN names its IP.
		{"plain", "hostname: custom-host\n  subdomain: t", "custom-host"},
	}
	for _, p := range pods {
		c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  %s
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo \"$(hostname);\"; cat /etc/hosts"]
`, p.name, p.spec, image), "apply", "-n", ns, "-f", "-")
	}
	for _, p := range pods {
		c.waitPhase(t, ns, p.name, "Succeeded")
		ip := c.jsonpath(t, ns, "pod/"+p.name, "{.status.podIP}")
		logs := c.must(t, "logs", p.name, "-n", ns)
		if first, _, _ := strings.Cut(logs, "\n"); first != p.want+";" {
			t.Errorf("pod %s: hostname printed %q, want %q", p.name, first, p.want+";")
		}
		want := ip + "\t" + p.want + "\n"
		if p.name == "plain" {
			want = ip + "\tcustom-host.t." + ns + ".svc.cluster.local\tcustom-host\n"
		}
		if !strings.Contains(logs, want) {
			t.Errorf("pod %s: /etc/hosts has no line %q:\n%s", p.name, want, logs)
		}
	}
}
