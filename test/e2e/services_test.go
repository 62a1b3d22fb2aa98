package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
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

// TestClusterDNS: a ClusterFirst pod's resolv.conf has the cluster's search path and ndots:5,
// and through the cluster DNS it resolves kubernetes.default to the kubernetes Service, a
// Service by short name and by its full name to its cluster IP, a headless Service's name to
// every ready pod and a pod's hostname.subdomain to its own IP, and names outside the
// cluster not at all when the machine cannot resolve them either (NXDOMAIN, not a hang).
func TestClusterDNS(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, serverPods("dns", 2, netexecImage(t))+fmt.Sprintf(`---
apiVersion: v1
kind: Service
metadata: {name: dns-svc}
spec:
  selector: {app: dns}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: dns-headless}
spec:
  clusterIP: None
  selector: {app: dns}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: %s
    command: ["sleep", "3600"]
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	for _, p := range []string{"dns-0", "dns-1", "client"} {
		c.waitFor(t, ns, "pod/"+p, `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready", func(v string) bool { return v == "True" })
	}
	resolv := c.must(t, "exec", "-n", ns, "client", "--", "cat", "/etc/resolv.conf")
	if want := "search " + ns + ".svc.cluster.local svc.cluster.local cluster.local"; !strings.Contains(resolv, want) || !strings.Contains(resolv, "options ndots:5") {
		t.Errorf("resolv.conf:\n%s\nwant %q and ndots:5", resolv, want)
	}
	lookup := func(name string) string {
		t.Helper()
		var last string
		for range 20 {
			r := c.kubectl(t, "exec", "-n", ns, "client", "--", "nslookup", name)
			last = r.stdout + r.stderr
			if r.code == 0 {
				return r.stdout
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("nslookup %s: %s", name, last)
		return ""
	}
	// busybox's nslookup asks for the name as given (no search path): full names here; the
	// search path is shown by wget below.
	if out := lookup("kubernetes.default.svc.cluster.local"); !strings.Contains(out, "10.96.0.1") {
		t.Errorf("kubernetes.default:\n%s", out)
	}
	clusterIP := c.jsonpath(t, ns, "svc/dns-svc", "{.spec.clusterIP}")
	if out := lookup("dns-svc." + ns + ".svc.cluster.local"); !strings.Contains(out, clusterIP) {
		t.Errorf("dns-svc does not resolve to %s:\n%s", clusterIP, out)
	}
	c.waitFor(t, ns, "endpointslices", `{range .items[?(@.metadata.labels.kubernetes\.io/service-name=="dns-headless")]}{range .endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{" "}{end}{end}`,
		"to list both pods", func(v string) bool { return len(strings.Fields(v)) == 2 })
	headless := lookup("dns-headless." + ns + ".svc.cluster.local")
	for i := range 2 {
		ip := c.jsonpath(t, ns, fmt.Sprintf("pod/dns-%d", i), "{.status.podIP}")
		if !strings.Contains(headless, ip) {
			t.Errorf("dns-headless lacks dns-%d's %s:\n%s", i, ip, headless)
		}
		if out := lookup(fmt.Sprintf("dns-%d.dns-headless.%s.svc.cluster.local", i, ns)); !strings.Contains(out, ip) {
			t.Errorf("dns-%d.dns-headless does not resolve to %s:\n%s", i, ip, out)
		}
	}
	// The search path and ndots, as a program in the pod resolves (Go's resolver, from a
	// server pod): short names of this namespace's Services and of kubernetes.default.
	for name, want := range map[string]string{"dns-svc": clusterIP, "kubernetes.default": "10.96.0.1", "dns-svc." + ns: clusterIP} {
		if r := c.kubectl(t, "exec", "-n", ns, "dns-0", "--", "/netexec", "--lookup", name); r.code != 0 || strings.TrimSpace(r.stdout) != want {
			t.Errorf("resolving %s in a pod: %d %q %s, want %s", name, r.code, r.stdout, r.stderr, want)
		}
	}
	start := time.Now()
	r := c.kubectl(t, "exec", "-n", ns, "client", "--", "nslookup", "no-such-service."+ns+".svc.cluster.local")
	if r.code == 0 || time.Since(start) > 10*time.Second {
		t.Errorf("a missing Service resolved, or took %v: %s%s", time.Since(start), r.stdout, r.stderr)
	}
}
