package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The node tests run real pods: `berth up` with its node agent on containerd, images pulled
// from a registry on loopback, and kubectl as a user drives it.

// podTimeout bounds a pod's way to a state the test waits for.
const podTimeout = 90 * time.Second

// jsonpath reads one field of an object with kubectl's jsonpath output.
func (c *cluster) jsonpath(t *testing.T, ns, object, path string) string {
	t.Helper()
	r := c.kubectl(t, "get", object, "-n", ns, "-o", "jsonpath="+path)
	if r.code != 0 {
		return ""
	}
	return r.stdout
}

// waitFor polls a jsonpath of an object until want(value) holds.
func (c *cluster) waitFor(t *testing.T, ns, object, path, what string, want func(string) bool) string {
	t.Helper()
	var v string
	eventually(t, podTimeout, object+" "+what, func() bool {
		v = c.jsonpath(t, ns, object, path)
		if want(v) {
			return true
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	return v
}

// waitPhase waits for a pod's phase.
func (c *cluster) waitPhase(t *testing.T, ns, pod, phase string) {
	t.Helper()
	c.waitFor(t, ns, "pod/"+pod, "{.status.phase}", "to be "+phase, func(v string) bool { return v == phase })
}

// podStatusColumn is the STATUS column of `kubectl get pod`.
func (c *cluster) podStatusColumn(t *testing.T, ns, pod string) string {
	t.Helper()
	r := c.kubectl(t, "get", "pod", pod, "-n", ns, "--no-headers")
	if r.code != 0 {
		return ""
	}
	f := strings.Fields(r.stdout)
	if len(f) < 3 {
		return ""
	}
	return f[2]
}

// waitStatusColumn waits until kubectl shows the pod with that STATUS.
func (c *cluster) waitStatusColumn(t *testing.T, ns, pod, status string) {
	t.Helper()
	eventually(t, podTimeout, "pod "+pod+" to show "+status, func() bool {
		if c.podStatusColumn(t, ns, pod) == status {
			return true
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
}

// events are the events of an object as kubectl prints them (type, reason, message).
func (c *cluster) events(t *testing.T, ns, name string) string {
	t.Helper()
	return c.must(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+name,
		"-o", `custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message`, "--no-headers")
}

// waitEvent waits until an event of the object has the reason (and the message part).
func (c *cluster) waitEvent(t *testing.T, ns, name, reason, message string) {
	t.Helper()
	eventually(t, podTimeout, fmt.Sprintf("a %s event of %s saying %q", reason, name, message), func() bool {
		for _, line := range strings.Split(c.events(t, ns, name), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[1] == reason && strings.Contains(line, message) {
				return true
			}
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
}

// TestNodeReady: the node berth up runs registers, turns Ready, and describes itself as a
// kubelet's node does.
func TestNodeReady(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	out := c.must(t, "get", "nodes", "-o", "wide")
	r := row(t, out, n.name)
	wantPrefix(t, r, n.name, "Ready", "<none>")
	if !strings.Contains(out, "127.0.0.1") || !strings.Contains(out, "containerd://") {
		t.Errorf("get nodes -o wide shows no InternalIP 127.0.0.1 or containerd runtime:\n%s", out)
	}
	if got := c.jsonpath(t, "", "node/"+n.name, "{.spec.podCIDR}"); got != n.podCIDR {
		t.Errorf("spec.podCIDR = %q, want %q", got, n.podCIDR)
	}
	if got := c.jsonpath(t, "", "node/"+n.name, "{.status.capacity.pods}"); got != "110" {
		t.Errorf("capacity pods = %q, want 110", got)
	}
	for _, cond := range []string{"MemoryPressure", "DiskPressure", "PIDPressure"} {
		if got := c.jsonpath(t, "", "node/"+n.name, `{.status.conditions[?(@.type=="`+cond+`")].status}`); got != "False" {
			t.Errorf("condition %s = %q, want False", cond, got)
		}
	}
	if got := c.jsonpath(t, "", "node/"+n.name, "{.status.daemonEndpoints.kubeletEndpoint.Port}"); got != strconv.Itoa(n.port) {
		t.Errorf("kubelet endpoint port = %q, want %d", got, n.port)
	}
	// The Lease the node renews every 10 s.
	if got := c.jsonpath(t, "kube-node-lease", "lease/"+n.name, "{.spec.holderIdentity} {.spec.leaseDurationSeconds}"); got != n.name+" 40" {
		t.Errorf("lease = %q, want holder %s and 40 s", got, n.name)
	}
	c.waitEvent(t, "default", n.name, "NodeReady", "status is now: NodeReady")
}

// TestNodeRunLogsDelete is the everyday flow: kubectl run, the pod runs with an IP of the
// node's pod CIDR, kubectl logs and logs -f, and kubectl delete honouring SIGTERM, or killing
// after the grace period a process that ignores it.
func TestNodeRunLogsDelete(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)

	c.must(t, "run", "t", "-n", ns, "--image="+image, "--", "sh", "-c", "echo hi; sleep 3600")
	c.waitPhase(t, ns, "t", "Running")
	ip := c.jsonpath(t, ns, "pod/t", "{.status.podIP}")
	_, cidr, _ := net.ParseCIDR(n.podCIDR)
	if parsed := net.ParseIP(ip); parsed == nil || !cidr.Contains(parsed) {
		t.Errorf("pod IP %q is not in the node's pod CIDR %s", ip, n.podCIDR)
	}
	if got := c.jsonpath(t, ns, "pod/t", "{.status.hostIP}"); got != "127.0.0.1" {
		t.Errorf("hostIP = %q", got)
	}
	wantPrefix(t, row(t, c.must(t, "get", "pod", "t", "-n", ns), "t"), "t", "1/1", "Running", "0")
	if out := c.must(t, "logs", "t", "-n", ns); out != "hi\n" {
		t.Errorf("kubectl logs said %q, want hi", out)
	}
	for _, reason := range []string{"Scheduled", "Pulled", "Created", "Started"} {
		c.waitEvent(t, ns, "t", reason, "")
	}

	// kubectl logs -f follows: lines written after it started reach it.
	c.must(t, "run", "ticker", "-n", ns, "--image="+image, "--", "sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done")
	c.waitPhase(t, ns, "ticker", "Running")
	follow, err := startProcess("kubectl logs -f", kubectlBin, "--kubeconfig", c.kubeconfig(), "logs", "-f", "ticker", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	defer follow.kill()
	eventually(t, 30*time.Second, "kubectl logs -f to show tick 5 and then later ticks", func() bool {
		out := follow.stdout.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 || !strings.Contains(out, "tick 5\n") {
			return false
		}
		last := lines[len(lines)-1]
		time.Sleep(time.Second)
		return follow.stdout.String() != out && !strings.HasSuffix(strings.TrimSpace(follow.stdout.String()), last) && !follow.exited()
	})

	// A process that handles SIGTERM ends at once; deletion completes well inside 30 s.
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: polite, namespace: %s}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'echo TERM; exit 0' TERM; echo ready; while true; do sleep 0.1; done"]
`, ns, image), "apply", "-f", "-")
	c.waitPhase(t, ns, "polite", "Running")
	start := time.Now()
	c.must(t, "delete", "pod", "polite", "-n", ns)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("deleting a pod whose process exits on SIGTERM took %s", d)
	}

	// `sleep` as PID 1 ignores SIGTERM: it is killed once the grace period is over.
	start = time.Now()
	c.must(t, "delete", "pod", "t", "-n", ns, "--grace-period=3")
	if d := time.Since(start); d < 3*time.Second || d > 20*time.Second {
		t.Errorf("deleting a pod that ignores SIGTERM with a 3 s grace period took %s", d)
	}
	c.waitEvent(t, ns, "t", "Killing", "Stopping container t")
	if out := c.kubectl(t, "get", "pod", "t", "-n", ns); out.code == 0 {
		t.Errorf("pod t is still there:\n%s", out.stdout)
	}
	rs := n.runtime(t)
	eventually(t, 30*time.Second, "the node to stop the deleted pods' containers", func() bool {
		for _, ctr := range runningContainers(t, rs, ns) {
			if ctr.Labels["io.kubernetes.pod.name"] != "ticker" {
				return false
			}
		}
		return true
	})
}

// TestNodeRestartPolicies: what a container's exit does under each restart policy.
func TestNodeRestartPolicies(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	pod := func(name, policy, script string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  restartPolicy: %s
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
`, name, ns, policy, image, script)
	}
	c.mustIn(t, pod("crash", "Always", "echo crashing; exit 1")+"---\n"+
		pod("never", "Never", "echo failing; exit 1")+"---\n"+
		pod("onfailure", "OnFailure", "echo done; exit 0"), "apply", "-f", "-")

	c.waitPhase(t, ns, "never", "Failed")
	if got := c.jsonpath(t, ns, "pod/never", "{.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason} {.status.containerStatuses[0].restartCount}"); got != "1 Error 0" {
		t.Errorf("never: exit code, reason, restarts = %q, want 1 Error 0", got)
	}
	wantPrefix(t, row(t, c.must(t, "get", "pod", "never", "-n", ns), "never"), "never", "0/1", "Error", "0")

	c.waitPhase(t, ns, "onfailure", "Succeeded")
	if got := c.jsonpath(t, ns, "pod/onfailure", "{.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason}"); got != "0 Completed" {
		t.Errorf("onfailure: exit code and reason = %q, want 0 Completed", got)
	}
	wantPrefix(t, row(t, c.must(t, "get", "pod", "onfailure", "-n", ns), "onfailure"), "onfailure", "0/1", "Completed", "0")

	// Always: restarts with a back-off of 10 s, then 20 s; kubectl shows CrashLoopBackOff
	// between them. Each restart's start time is the previous one's plus at least the back-off.
	c.waitStatusColumn(t, ns, "crash", "CrashLoopBackOff")
	var starts []time.Time
	eventually(t, 2*time.Minute, "crash to restart twice", func() bool {
		v := c.jsonpath(t, ns, "pod/crash", "{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].lastState.terminated.startedAt}")
		f := strings.Fields(v)
		if len(f) == 2 {
			at, err := time.Parse(time.RFC3339, f[1])
			if err == nil && (len(starts) == 0 || at.After(starts[len(starts)-1])) {
				starts = append(starts, at)
			}
		}
		time.Sleep(500 * time.Millisecond)
		return len(starts) >= 3
	})
	if gap := starts[1].Sub(starts[0]); gap < 10*time.Second {
		t.Errorf("the first back-off was %s, want at least 10 s", gap)
	}
	if gap := starts[2].Sub(starts[1]); gap < 20*time.Second {
		t.Errorf("the second back-off was %s, want at least 20 s", gap)
	}
	restarts, _ := strconv.Atoi(c.jsonpath(t, ns, "pod/crash", "{.status.containerStatuses[0].restartCount}"))
	if restarts < 3 {
		t.Errorf("restartCount %d, want at least 3", restarts)
	}
	if got := c.jsonpath(t, ns, "pod/crash", "{.status.containerStatuses[0].lastState.terminated.exitCode} {.status.containerStatuses[0].lastState.terminated.reason}"); got != "1 Error" {
		t.Errorf("crash: last state = %q, want 1 Error", got)
	}
	c.waitEvent(t, ns, "crash", "BackOff", "Back-off restarting failed container c in pod crash_"+ns)
	if out := c.must(t, "logs", "crash", "-n", ns, "--previous"); out != "crashing\n" {
		t.Errorf("kubectl logs --previous said %q", out)
	}
}

// TestNodeInitContainers: init containers run in order, each to its end, before the app;
// a sidecar keeps running beside it; a failing one holds the pod in Init:Error or
// Init:CrashLoopBackOff.
func TestNodeInitContainers(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: ordered, namespace: %[1]s}
spec:
  volumes: [{name: work, emptyDir: {}}]
  initContainers:
  - name: first
    image: %[2]s
    command: ["sh", "-c", "sleep 1; echo first >> /work/log"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: second
    image: %[2]s
    command: ["sh", "-c", "echo second >> /work/log"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: sidecar
    image: %[2]s
    restartPolicy: Always
    command: ["sh", "-c", "echo sidecar >> /work/log; while true; do sleep 1; done"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: %[2]s
    command: ["sh", "-c", "echo app >> /work/log; cat /work/log; sleep 3600"]
    volumeMounts: [{name: work, mountPath: /work}]
---
apiVersion: v1
kind: Pod
metadata: {name: initfail, namespace: %[1]s}
spec:
  restartPolicy: Never
  initContainers:
  - {name: broken, image: %[2]s, command: ["sh", "-c", "exit 3"]}
  containers:
  - {name: app, image: %[2]s, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: initloop, namespace: %[1]s}
spec:
  initContainers:
  - {name: broken, image: %[2]s, command: ["sh", "-c", "exit 3"]}
  containers:
  - {name: app, image: %[2]s, command: ["sleep", "3600"]}
`, ns, image), "apply", "-f", "-")

	c.waitPhase(t, ns, "ordered", "Running")
	c.waitFor(t, ns, "pod/ordered", "{.status.containerStatuses[0].ready}", "app ready", func(v string) bool { return v == "true" })
	if out := c.must(t, "logs", "ordered", "-n", ns, "-c", "app"); out != "first\nsecond\nsidecar\napp\n" {
		t.Errorf("the app saw %q, want first, second, sidecar, app in that order", out)
	}
	got := c.jsonpath(t, ns, "pod/ordered", `{range .status.initContainerStatuses[*]}{.name}={.state.terminated.reason}{.state.running.startedAt}/{.ready};{end}`)
	parts := strings.Split(strings.TrimSuffix(got, ";"), ";")
	if len(parts) != 3 || parts[0] != "first=Completed/true" || parts[1] != "second=Completed/true" || !strings.HasPrefix(parts[2], "sidecar=20") || !strings.HasSuffix(parts[2], "/true") {
		t.Errorf("init container statuses %q, want first and second Completed, sidecar running and ready", got)
	}
	wantPrefix(t, row(t, c.must(t, "get", "pod", "ordered", "-n", ns), "ordered"), "ordered", "2/2", "Running", "0")

	c.waitPhase(t, ns, "initfail", "Failed")
	if got := c.podStatusColumn(t, ns, "initfail"); got != "Init:Error" {
		t.Errorf("initfail shows %q, want Init:Error", got)
	}
	if got := c.jsonpath(t, ns, "pod/initfail", "{.status.containerStatuses[0].state.waiting.reason}"); got != "PodInitializing" {
		t.Errorf("initfail's app waits with %q, want PodInitializing", got)
	}
	c.waitStatusColumn(t, ns, "initloop", "Init:CrashLoopBackOff")
	if got := c.jsonpath(t, ns, "pod/initloop", "{.status.phase}"); got != "Pending" {
		t.Errorf("initloop phase %q, want Pending", got)
	}
}

// TestNodeLifecycleHooks: postStart runs once the container has started, preStop before it
// is stopped; their effect is seen in a shared emptyDir and on the host.
func TestNodeLifecycleHooks(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	hostDir := t.TempDir()
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hooks, namespace: %s}
spec:
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: host, hostPath: {path: %s, type: Directory}}
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "until [ -f /shared/poststart ]; do sleep 0.1; done; echo saw $(cat /shared/poststart); sleep 3600"]
    volumeMounts: [{name: shared, mountPath: /shared}, {name: host, mountPath: /host}]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo from-poststart > /shared/poststart"]}
      preStop:
        exec: {command: ["sh", "-c", "echo from-prestop > /host/prestop"]}
`, ns, hostDir, image), "apply", "-f", "-")
	c.waitPhase(t, ns, "hooks", "Running")
	eventually(t, 30*time.Second, "the app to see the postStart hook's file", func() bool {
		return c.kubectl(t, "logs", "hooks", "-n", ns).stdout == "saw from-poststart\n"
	})
	c.must(t, "delete", "pod", "hooks", "-n", ns)
	data, err := os.ReadFile(filepath.Join(hostDir, "prestop"))
	if err != nil || string(data) != "from-prestop\n" {
		t.Errorf("the preStop hook's file: %q, %v", data, err)
	}

	// A failing postStart hook kills the container: FailedPostStartHook.
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: badhook, namespace: %s}
spec:
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "exit 7"]}
`, ns, image), "apply", "-f", "-")
	c.waitEvent(t, ns, "badhook", "FailedPostStartHook", "")
}

// TestNodeImageErrors: an image that is not there gives ErrImagePull then ImagePullBackOff;
// imagePullPolicy Never with an absent image gives ErrImageNeverPull.
func TestNodeImageErrors(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	missing := registryHost(t) + "/nothing-here:1"
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: missing, namespace: %[1]s}
spec:
  containers:
  - {name: c, image: %[2]s}
---
apiVersion: v1
kind: Pod
metadata: {name: neverpull, namespace: %[1]s}
spec:
  containers:
  - {name: c, image: %[2]s, imagePullPolicy: Never}
`, ns, missing), "apply", "-f", "-")

	seen := map[string]bool{}
	eventually(t, podTimeout, "missing to show ErrImagePull and then ImagePullBackOff", func() bool {
		seen[c.podStatusColumn(t, ns, "missing")] = true
		time.Sleep(200 * time.Millisecond)
		return seen["ErrImagePull"] && seen["ImagePullBackOff"]
	})
	c.waitEvent(t, ns, "missing", "Failed", `Failed to pull image "`+missing+`"`)
	c.waitEvent(t, ns, "missing", "BackOff", `Back-off pulling image "`+missing+`"`)

	c.waitStatusColumn(t, ns, "neverpull", "ErrImageNeverPull")
	if got := c.jsonpath(t, ns, "pod/neverpull", "{.status.containerStatuses[0].state.waiting.message}"); !strings.Contains(got, `Container image "`+missing+`" is not present with pull policy of Never`) {
		t.Errorf("neverpull's message %q", got)
	}
	c.waitEvent(t, ns, "neverpull", "ErrImageNeverPull", "is not present with pull policy of Never")
}

// TestNodeAdmission: a pod asking more CPU than the node has stays Pending under the
// scheduler; one bound by spec.nodeName is rejected by the node with OutOfcpu.
func TestNodeAdmission(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: %[1]s}
spec:
  containers:
  - {name: c, image: %[2]s, command: ["sleep", "3600"], resources: {requests: {cpu: "1000"}}}
---
apiVersion: v1
kind: Pod
metadata: {name: forced, namespace: %[1]s}
spec:
  nodeName: %[3]s
  containers:
  - {name: c, image: %[2]s, command: ["sleep", "3600"], resources: {requests: {cpu: "1000"}}}
`, ns, image, n.name), "apply", "-f", "-")

	c.waitEvent(t, ns, "huge", "FailedScheduling", "Insufficient cpu")
	if got := c.jsonpath(t, ns, "pod/huge", "{.status.phase}"); got != "Pending" {
		t.Errorf("huge is %q, want Pending", got)
	}
	c.waitPhase(t, ns, "forced", "Failed")
	got := c.jsonpath(t, ns, "pod/forced", "{.status.reason}|{.status.message}")
	if !strings.HasPrefix(got, "OutOfcpu|Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000") {
		t.Errorf("forced: reason|message = %q", got)
	}
	wantPrefix(t, row(t, c.must(t, "get", "pod", "forced", "-n", ns), "forced"), "forced", "0/1", "OutOfcpu", "0")
	c.waitEvent(t, ns, "forced", "OutOfcpu", "Node didn't have enough resource: cpu")
}
