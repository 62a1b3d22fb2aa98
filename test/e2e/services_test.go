package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
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
	kubernetesIP := c.jsonpath(t, "default", "svc/kubernetes", "{.spec.clusterIP}")
	if out := lookup("kubernetes.default.svc.cluster.local"); !strings.Contains(out, kubernetesIP) {
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
	for name, want := range map[string]string{"dns-svc": clusterIP, "kubernetes.default": kubernetesIP, "dns-svc." + ns: clusterIP} {
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

// TestServiceTraffic: berth up's service proxy carries a Service's traffic to its ready
// endpoints: a pod reaches both servers through the cluster IP, the short name and the full
// name; the machine reaches the cluster IP and the NodePort; a pod reaches its own Service
// (hairpin); the API server's services/proxy and pods/proxy reach them too; an unready pod
// gets no more traffic; a Service without endpoints refuses at once rather than letting the
// client time out.
func TestServiceTraffic(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := netexecImage(t)
	c.mustIn(t, serverPods("web", 3, image)+fmt.Sprintf(`---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: empty}
spec:
  selector: {app: nobody}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: %s
    command: ["/netexec", "--http-port=8081"]
`, image), "apply", "-n", ns, "-f", "-")
	for _, p := range []string{"web-0", "web-1", "web-2", "client"} {
		c.waitFor(t, ns, "pod/"+p, `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready", func(v string) bool { return v == "True" })
	}
	c.waitFor(t, ns, "endpoints/web", `{.subsets[*].addresses[*].ip}`, "to list the three servers", func(v string) bool { return len(strings.Fields(v)) == 3 })
	clusterIP := c.jsonpath(t, ns, "svc/web", "{.spec.clusterIP}")
	nodePort := c.jsonpath(t, ns, "svc/web", "{.spec.ports[0].nodePort}")

	// get fetches url from pod and returns the body, "" on an error.
	get := func(pod, url string, flags ...string) (string, result) {
		r := c.kubectl(t, append([]string{"exec", "-n", ns, pod, "--", "/netexec", "--get", url, "--timeout", "3s"}, flags...)...)
		if r.code != 0 {
			return "", r
		}
		return r.stdout, r
	}
	// reaches asks for /hostname until it has seen every one of want (the proxy picks an
	// endpoint at random), and fails on any other answer.
	reaches := func(what string, fetch func() (string, error), want ...string) {
		t.Helper()
		seen := map[string]bool{}
		var lastErr error
		deadline := time.Now().Add(30 * time.Second)
		for len(seen) < len(want) && time.Now().Before(deadline) {
			body, err := fetch()
			if err != nil {
				lastErr = err
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if !slices.Contains(want, body) {
				t.Errorf("%s answered %q, want one of %v", what, body, want)
				return
			}
			seen[body] = true
		}
		if len(seen) < len(want) {
			t.Errorf("%s: saw %v within 30 s, want all of %v (last error: %v)", what, seen, want, lastErr)
		}
	}
	fromPod := func(pod, url string) func() (string, error) {
		return func() (string, error) {
			body, r := get(pod, url)
			if r.code != 0 {
				return "", fmt.Errorf("%s%s", r.stdout, r.stderr)
			}
			return body, nil
		}
	}
	fromHost := func(url string) func() (string, error) {
		return func() (string, error) {
			// A new connection each time: a kept-alive one stays with its endpoint.
			client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Get(url)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
	}
	all := []string{"web-0", "web-1", "web-2"}
	reaches("the cluster IP from a pod", fromPod("client", "http://"+clusterIP+"/hostname"), all...)
	reaches("the short name from a pod", fromPod("client", "http://web/hostname"), all...)
	reaches("the full name from a pod", fromPod("client", "http://web."+ns+".svc.cluster.local/hostname"), all...)
	reaches("the Service from its own endpoint (hairpin)", fromPod("web-0", "http://web/hostname"), all...)
	reaches("the cluster IP from the machine", fromHost("http://"+clusterIP+"/hostname"), all...)
	hostIP := machineIPv4(t)
	reaches("the NodePort from the machine", fromHost("http://"+net.JoinHostPort(hostIP, nodePort)+"/hostname"), all...)

	// kubernetes.default answers from inside a pod: its name, the Service's cluster IP through
	// the proxy, and the API server's certificate for that name under the pod's CA bundle.
	if out, r := get("client", "https://kubernetes.default/healthz", "--ca-file", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"); out != "ok" {
		t.Errorf("GET https://kubernetes.default/healthz from a pod: %q %s", out, r.stderr)
	}

	// The API server's proxies (kubectl proxy's paths) reach the pods too, and so does
	// kubectl port-forward svc/web (to one of its pods).
	if out := c.must(t, "get", "--raw", "/api/v1/namespaces/"+ns+"/services/web:http/proxy/hostname"); !slices.Contains(all, out) {
		t.Errorf("services/proxy answered %q, want one of %v", out, all)
	}
	localPort, _ := c.portForward(t, ns, "svc/web", ":80", 8080)
	if body, err := fromHost(fmt.Sprintf("http://127.0.0.1:%d/hostname", localPort))(); err != nil || !slices.Contains(all, body) {
		t.Errorf("GET through kubectl port-forward svc/web: %q, %v", body, err)
	}
	if out := c.must(t, "get", "--raw", "/api/v1/namespaces/"+ns+"/pods/web-1:8080/proxy/hostname"); out != "web-1" {
		t.Errorf("pods/proxy answered %q, want web-1", out)
	}

	// Unready: web-1 leaves the endpoints, and then every answer is web-0's or web-2's.
	c.must(t, "exec", "-n", ns, "web-1", "--", "rm", "/tmp/ready")
	c.waitFor(t, ns, "endpoints/web", `{.subsets[*].addresses[*].ip}`, "to list two servers", func(v string) bool { return len(strings.Fields(v)) == 2 })
	eventually(t, 10*time.Second, "the proxy to drop web-1", func() bool {
		for range 12 {
			if body, _ := get("client", "http://"+clusterIP+"/hostname"); body != "web-0" && body != "web-2" {
				return false
			}
		}
		return true
	})

	// No endpoints: refused (kube-proxy's reject rule), not a 3 s timeout.
	emptyIP := c.jsonpath(t, ns, "svc/empty", "{.spec.clusterIP}")
	start := time.Now()
	_, r := get("client", "http://"+emptyIP+"/")
	if elapsed := time.Since(start); r.code == 0 || !strings.Contains(r.stderr, "connection refused") || elapsed > 3*time.Second {
		t.Errorf("a Service without endpoints: code %d after %v: %s%s, want connection refused at once", r.code, elapsed, r.stdout, r.stderr)
	}
}

// machineIPv4 is this machine's first global IPv4 address, where NodePorts answer.
func machineIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("no global IPv4 address on this machine")
	return ""
}
