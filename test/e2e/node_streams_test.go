package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNodeStreams: kubectl exec (with and without stdin, with the command's exit code),
// attach and port-forward work through the API server and the node API, and logs --previous
// shows the last run; the node API refuses a request without a client certificate.
func TestNodeStreams(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %[1]s
    command: ["sh", "-c", "mkdir -p /www; echo hello from the pod > /www/index.html; httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %[1]s
    command: ["sh", "-c", "read line; echo got $line"]
    stdin: true
    stdinOnce: true
---
apiVersion: v1
kind: Pod
metadata: {name: twice}
spec:
  restartPolicy: OnFailure
  containers:
  - name: c
    image: %[1]s
    command: ["sh", "-c", "if [ -f /tmp/x/ran ]; then echo second run; sleep 3600; fi; touch /tmp/x/ran; echo first run; exit 1"]
    volumeMounts: [{name: x, mountPath: /tmp/x}]
  volumes: [{name: x, emptyDir: {}}]
`, image), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "web", "Running")

	// exec: stdout, stderr and the exit code.
	r := c.kubectl(t, "exec", "web", "-n", ns, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if r.code != 3 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err\n") {
		t.Errorf("kubectl exec: code %d, stdout %q, stderr %q; want 3, out, err", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "command terminated with exit code 3") {
		t.Errorf("kubectl exec's stderr %q does not report the exit code", r.stderr)
	}
	// exec -i: stdin reaches the command.
	if out := mustSucceed(t, c.kubectlIn(t, "hello\nworld\n", "exec", "-i", "web", "-n", ns, "--", "sh", "-c", "cat; echo done")); out != "hello\nworld\ndone\n" {
		t.Errorf("kubectl exec -i said %q, want hello, world, done", out)
	}
	// exec in a container that does not run.
	if r := c.kubectl(t, "exec", "web", "-n", ns, "-c", "nope", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "container nope is not valid for pod web") {
		t.Errorf("kubectl exec into an unknown container: code %d, stderr %q", r.code, r.stderr)
	}

	// attach -i: the container's stdin is the client's.
	c.waitPhase(t, ns, "reader", "Running")
	if out := c.kubectlIn(t, "berth\n", "attach", "-i", "reader", "-n", ns).stdout; !strings.Contains(out, "got berth") {
		t.Errorf("kubectl attach -i printed %q, want got berth", out)
	}
	c.waitPhase(t, ns, "reader", "Succeeded")

	// port-forward: a local port reaches the pod's server.
	localPort, pf := c.portForward(t, ns, "pod/web", ":http", 8080)
	for i := 0; i < 2; i++ { // two connections over one forward
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", localPort))
		if err != nil {
			t.Fatalf("GET through port-forward: %v\n%s", err, pf.output.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello from the pod\n" {
			t.Errorf("GET through port-forward answered %d %q", resp.StatusCode, body)
		}
	}

	// logs --previous: the run before the restart.
	c.waitFor(t, ns, "pod/twice", "{.status.containerStatuses[0].restartCount}", "to restart", func(v string) bool { return v == "1" })
	c.waitPhase(t, ns, "twice", "Running")
	if out := c.must(t, "logs", "twice", "-n", ns, "--previous"); out != "first run\n" {
		t.Errorf("kubectl logs --previous said %q, want first run", out)
	}
	eventually(t, podTimeout, "the second run's log", func() bool {
		return c.must(t, "logs", "twice", "-n", ns) == "second run\n"
	})

	// The node API wants a client certificate of the cluster CA.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	for _, path := range []string{"/pods", "/exec/" + ns + "/web/web?command=true&output=1", "/containerLogs/" + ns + "/web/web"} {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", n.port, path))
		if err != nil {
			t.Fatalf("GET %s on the node API: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a client certificate: %d, want 401", path, resp.StatusCode)
		}
	}
}

// portForward runs kubectl port-forward to target (pod/NAME or svc/NAME) with ports
// (":http", ":80") until the test ends, and returns the local port once kubectl says it
// forwards to the pod's remotePort.
func (c *cluster) portForward(t *testing.T, ns, target, ports string, remotePort int) (int, *process) {
	t.Helper()
	pf, err := startProcess("kubectl port-forward", kubectlBin, "--kubeconfig", c.kubeconfig(), "port-forward", "-n", ns, target, ports)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pf.kill)
	forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> ` + strconv.Itoa(remotePort))
	var localPort int
	eventually(t, 30*time.Second, "kubectl port-forward "+target+" to listen", func() bool {
		if m := forwarding.FindStringSubmatch(pf.stdout.String()); m != nil {
			localPort, _ = strconv.Atoi(m[1])
			return true
		}
		if pf.exited() {
			t.Fatalf("kubectl port-forward exited: %v\n%s", pf.err, pf.output.String())
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
	return localPort, pf
}
