package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// serverPods are n netexec pods labelled app=NAME, each ready while /tmp/ready exists (an
// exec readiness probe, so that a test can make one unready with kubectl exec).
func serverPods(name string, n int, image string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Pod
metadata: {name: %[1]s-%[2]d, labels: {app: %[1]s}}
spec:
  terminationGracePeriodSeconds: 1
  hostname: %[1]s-%[2]d
  subdomain: %[1]s-headless
  containers:
  - name: server
    image: %[3]s
    command: ["sh", "-c", "touch /tmp/ready; exec /netexec --http-port=8080"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      exec: {command: ["test", "-f", "/tmp/ready"]}
      periodSeconds: 1
`, name, i, image)
	}
	return b.String()
}

// TestServiceEndpoints: three server pods behind a Service (created with kubectl expose) and a
// headless one: the EndpointSlice controller lists their ready endpoints with the named
// target port resolved, the Endpoints controller the same; a pod made unready leaves the
// ready endpoints; kubectl shows Kubernetes' columns.
func TestServiceEndpoints(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, serverPods("web", 3, netexecImage(t))+`---
apiVersion: v1
kind: Service
metadata: {name: web-headless}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
`, "apply", "-n", ns, "-f", "-")
	c.must(t, "expose", "pod", "web-0", "-n", ns, "--name", "web", "--port", "80", "--target-port", "http", "--selector", "app=web")
	for i := range 3 {
		c.waitFor(t, ns, fmt.Sprintf("pod/web-%d", i), `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready", func(v string) bool { return v == "True" })
	}
	readyAddresses := func(svc string) string {
		return c.jsonpath(t, ns, "endpointslices", fmt.Sprintf(`{range .items[?(@.metadata.labels.kubernetes\.io/service-name=="%s")]}{range .endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{" "}{end}{end}`, svc))
	}
	for _, svc := range []string{"web", "web-headless"} {
		c.waitFor(t, ns, "endpointslices", fmt.Sprintf(`{range .items[?(@.metadata.labels.kubernetes\.io/service-name=="%s")]}{range .endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{" "}{end}{end}`, svc),
			"to list three ready endpoints of "+svc, func(v string) bool { return len(strings.Fields(v)) == 3 })
	}
	port := c.jsonpath(t, ns, "endpointslices", `{.items[?(@.metadata.labels.kubernetes\.io/service-name=="web")].ports[0].port}`)
	if port != "8080" {
		t.Errorf("the slice's port %q, want 8080 (the pods' port named http)", port)
	}
	hostnames := c.jsonpath(t, ns, "endpointslices", `{range .items[?(@.metadata.labels.kubernetes\.io/service-name=="web-headless")].endpoints[*]}{.hostname}{" "}{end}`)
	if len(strings.Fields(hostnames)) != 3 {
		t.Errorf("the headless slice's hostnames %q, want the pods' three", hostnames)
	}
	c.waitFor(t, ns, "endpoints/web", `{.subsets[*].addresses[*].ip}`, "to list three addresses", func(v string) bool { return len(strings.Fields(v)) == 3 })

	// Unready: web-1 leaves the ready endpoints, and the Endpoints' addresses.
	ip1 := c.jsonpath(t, ns, "pod/web-1", "{.status.podIP}")
	c.must(t, "exec", "-n", ns, "web-1", "--", "rm", "/tmp/ready")
	c.waitFor(t, ns, "endpoints/web", `{.subsets[*].notReadyAddresses[*].ip}`, "to list web-1 as not ready", func(v string) bool { return v == ip1 })
	if got := readyAddresses("web"); strings.Contains(got, ip1) || len(strings.Fields(got)) != 2 {
		t.Errorf("ready endpoints %q after web-1 went unready, want the other two", got)
	}

	out := c.must(t, "get", "svc", "web", "-n", ns)
	if !strings.Contains(out, "NAME   TYPE        CLUSTER-IP") || !strings.Contains(out, "80/TCP") {
		t.Errorf("kubectl get svc:\n%s", out)
	}
}
