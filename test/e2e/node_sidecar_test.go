package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNodeProbeRedirects: an HTTP liveness probe answered with a redirect to another host
// does not follow it and passes, with a ProbeWarning event that shows the answer, for an app
// container and for a sidecar alike; neither is ever restarted.
func TestNodeProbeRedirects(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image, server := busyboxImage(t), netexecImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: redirect}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %[2]s
    command: ["/netexec", "--http-port=8080"]
    livenessProbe:
      httpGet: {path: "/redirect?loc=http%%3A%%2F%%2F0.0.0.0%%2F", port: 8080}
      initialDelaySeconds: 2
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 3
---
apiVersion: v1
kind: Pod
metadata: {name: redirect-sidecar}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: web
    image: %[2]s
    restartPolicy: Always
    command: ["/netexec", "--http-port=8080"]
    livenessProbe:
      httpGet: {path: "/redirect?loc=http%%3A%%2F%%2F0.0.0.0%%2F", port: 8080}
      initialDelaySeconds: 2
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 3
  containers:
  - name: app
    image: %[1]s
    command: ["sleep", "3600"]
`, image, server), "apply", "-n", ns, "-f", "-")

	// The probes allow a slow answer (timeoutSeconds 5) under CI's load; a redirect counted as
	// a failure would still show as an Unhealthy event at once.
	const warning = `Liveness probe warning: Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`
	for _, tc := range []struct{ pod, fieldPath, restarts string }{
		{"redirect", "spec.containers{web}", "{.status.containerStatuses[0].restartCount}"},
		{"redirect-sidecar", "spec.initContainers{web}", "{.status.initContainerStatuses[0].restartCount}"},
	} {
		c.waitPhase(t, ns, tc.pod, "Running")
		c.waitEvent(t, ns, tc.pod, "ProbeWarning", warning)
		got := c.must(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+tc.pod+",reason=ProbeWarning",
			"-o", `jsonpath={range .items[*]}{.type} {.involvedObject.fieldPath}{"\n"}{end}`)
		if !strings.HasPrefix(got, "Warning "+tc.fieldPath+"\n") {
			t.Errorf("%s's ProbeWarning events: %q, want Warning events of %s", tc.pod, got, tc.fieldPath)
		}
		if ev := c.events(t, ns, tc.pod); strings.Contains(ev, "Unhealthy") || strings.Contains(ev, "Killing") {
			t.Errorf("%s's events show a failed probe or a kill:\n%s", tc.pod, ev)
		}
	}
	// Several probes later, still no restart.
	time.Sleep(3 * time.Second)
	for _, tc := range []struct{ pod, path string }{
		{"redirect", "{.status.containerStatuses[0].restartCount}"},
		{"redirect-sidecar", "{.status.initContainerStatuses[0].restartCount}"},
	} {
		if got := c.jsonpath(t, ns, "pod/"+tc.pod, tc.path); got != "0" {
			t.Errorf("%s restarted %s times, want 0: a redirect elsewhere is a passing liveness probe", tc.pod, got)
		}
	}
}

// TestNodeSidecarProbes: a sidecar's startup probe holds the app containers back until it
// passes; its readiness counts in the pod's Ready (and kubectl's READY column); its liveness
// probe restarts it, and only it.
func TestNodeSidecarProbes(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: sidecar}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: state, emptyDir: {}}]
  initContainers:
  - name: side
    image: %[1]s
    restartPolicy: Always
    # The first run starts after 8 s, is ready 8 s later and fails its liveness probe 5 s after
    # that; the runs after it (the state volume remembers) start, get ready and stay alive.
    command: ["sh", "-c", "if [ -f /state/ran ]; then touch /tmp/started /tmp/ready /tmp/alive; exec sleep 3600; fi; touch /tmp/alive; sleep 8; touch /tmp/started; sleep 8; touch /tmp/ready; sleep 5; touch /state/ran; rm /tmp/alive; sleep 3600"]
    volumeMounts: [{name: state, mountPath: /state}]
    startupProbe:
      exec: {command: ["test", "-f", "/tmp/started"]}
      periodSeconds: 1
      failureThreshold: 60
    readinessProbe:
      exec: {command: ["test", "-f", "/tmp/ready"]}
      periodSeconds: 1
    livenessProbe:
      exec: {command: ["test", "-f", "/tmp/alive"]}
      periodSeconds: 1
      failureThreshold: 1
  containers:
  - name: app
    image: %[1]s
    command: ["sleep", "3600"]
`, image), "apply", "-n", ns, "-f", "-")

	// Before the startup probe passes: the sidecar runs, not started; the app waits.
	c.waitFor(t, ns, "pod/sidecar", "{.status.initContainerStatuses[0].state.running.startedAt}", "to run its sidecar", func(v string) bool { return v != "" })
	if got := c.jsonpath(t, ns, "pod/sidecar", "{.status.initContainerStatuses[0].started}/{.status.containerStatuses[0].state.waiting.reason}"); got != "false/PodInitializing" {
		t.Errorf("before the sidecar's startup probe passed: started/app waiting = %q, want false/PodInitializing", got)
	}
	if got := c.podStatusColumn(t, ns, "sidecar"); got != "Init:0/1" {
		t.Errorf("STATUS before the sidecar started = %q, want Init:0/1", got)
	}

	// Started, not ready: the app runs; the pod is not Ready and says why.
	c.waitFor(t, ns, "pod/sidecar", "{.status.containerStatuses[0].state.running.startedAt}", "to start its app", func(v string) bool { return v != "" })
	got := c.jsonpath(t, ns, "pod/sidecar", `{.status.initContainerStatuses[0].started}/{.status.initContainerStatuses[0].ready} {.status.conditions[?(@.type=="Ready")].status}: {.status.conditions[?(@.type=="Ready")].message}`)
	if got != "true/false False: containers with unready status: [side]" {
		t.Errorf("once the sidecar started: %q, want it started and unready, and the pod not Ready because of it", got)
	}

	// Ready: the pod is Ready, and kubectl counts the sidecar in READY.
	c.waitFor(t, ns, "pod/sidecar", `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready", func(v string) bool { return v == "True" })
	if r := row(t, c.must(t, "get", "pod", "sidecar", "-n", ns), "sidecar"); len(r) < 2 || r[1] != "2/2" {
		t.Errorf("READY column = %v, want 2/2 (the sidecar counts)", r)
	}

	// Liveness: the sidecar restarts, the app does not.
	c.waitFor(t, ns, "pod/sidecar", "{.status.initContainerStatuses[0].restartCount}", "to restart its sidecar", func(v string) bool {
		n, _ := strconv.Atoi(v)
		return n >= 1
	})
	c.waitEvent(t, ns, "sidecar", "Killing", "Init container side failed liveness probe")
	c.waitFor(t, ns, "pod/sidecar", `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready again", func(v string) bool { return v == "True" })
	if got := c.jsonpath(t, ns, "pod/sidecar", "{.status.containerStatuses[0].restartCount}"); got != "0" {
		t.Errorf("the app restarted %s times with its sidecar, want 0", got)
	}
}

// TestNodePreStopCallsAnotherPod is the shape of upstream's "PreStop should call prestop when
// killing a pod": the tester's exec preStop hook POSTs to a server pod before the tester's
// container gets its SIGTERM, within the grace period.
func TestNodePreStopCallsAnotherPod(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	hostDir := t.TempDir()
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: server}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: host, hostPath: {path: %[2]s, type: Directory}}
  containers:
  - name: server
    image: %[1]s
    command: ["/netexec", "--http-port=8080", "--write-file=/host/received"]
    ports: [{containerPort: 8080}]
    volumeMounts: [{name: host, mountPath: /host}]
`, netexecImage(t), hostDir), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "server", "Running")
	serverIP := c.jsonpath(t, ns, "pod/server", "{.status.podIP}")

	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: tester}
spec:
  terminationGracePeriodSeconds: 10
  volumes: [{name: host, hostPath: {path: %[2]s, type: Directory}}]
  containers:
  - name: tester
    image: %[1]s
    command: ["sh", "-c", "trap 'echo term >> /host/order; exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts: [{name: host, mountPath: /host}]
    lifecycle:
      preStop:
        exec:
          command: ["sh", "-c", "wget -O- --post-data='{\"Source\": \"prestop\"}' http://%[3]s/write && echo prestop >> /host/order"]
`, image, hostDir, serverIP+":8080"), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "tester", "Running")
	start := time.Now()
	c.must(t, "delete", "pod", "tester", "-n", ns)
	if took := time.Since(start); took > 9*time.Second {
		t.Errorf("deleting the tester took %v: its container should have stopped on SIGTERM, not at the end of its grace period", took)
	}

	received, err := os.ReadFile(filepath.Join(hostDir, "received"))
	if err != nil || string(received) != `{"Source": "prestop"}`+"\n" {
		t.Errorf("the server received %q (%v), want the preStop hook's POST", received, err)
	}
	order, err := os.ReadFile(filepath.Join(hostDir, "order"))
	if err != nil || string(order) != "prestop\nterm\n" {
		t.Errorf("the tester's order of events %q (%v), want the preStop hook done before SIGTERM", order, err)
	}
	if ev := c.events(t, ns, "tester"); strings.Contains(ev, "FailedPreStopHook") {
		t.Errorf("the preStop hook failed:\n%s", ev)
	}
}

// TestNodeSidecarHooksAndStopOrder: sidecars run their postStart and preStop hooks like app
// containers; on deletion every preStop hook runs at once, and the containers stop in
// order: the app containers, then the sidecars, the last declared first.
func TestNodeSidecarHooksAndStopOrder(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	hostDir := t.TempDir()
	container := func(name string, sidecar bool) string {
		policy := ""
		if sidecar {
			policy = "\n    restartPolicy: Always"
		}
		// A container that takes 1 s to stop, so that an order is there to see.
		return fmt.Sprintf(`
  - name: %[1]s
    image: %[2]s%[3]s
    command: ["sh", "-c", "trap 'sleep 1; echo %[1]s-stopped >> /host/log; exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts: [{name: host, mountPath: /host}]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo %[1]s-poststart >> /host/log"]}
      preStop:
        exec: {command: ["sh", "-c", "echo %[1]s-prestop >> /host/log"]}`, name, image, policy)
	}
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: ordered}
spec:
  terminationGracePeriodSeconds: 20
  volumes: [{name: host, hostPath: {path: %s, type: Directory}}]
  initContainers:%s%s
  containers:%s
`, hostDir, container("first", true), container("second", true), container("app", false)), "apply", "-n", ns, "-f", "-")
	c.waitFor(t, ns, "pod/ordered", `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready", func(v string) bool { return v == "True" })
	c.must(t, "delete", "pod", "ordered", "-n", ns)

	data, err := os.ReadFile(filepath.Join(hostDir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	var starts, stops []string
	prestops := map[string]int{}
	for i, line := range strings.Fields(string(data)) {
		name, what, _ := strings.Cut(line, "-")
		switch what {
		case "poststart":
			starts = append(starts, name)
		case "prestop":
			prestops[name] = i
		case "stopped":
			stops = append(stops, name)
			if at, ok := prestops[name]; !ok || at > i {
				t.Errorf("%s stopped before its preStop hook ran; log:\n%s", name, data)
			}
		}
	}
	if strings.Join(starts, ",") != "first,second,app" {
		t.Errorf("postStart hooks ran for %v, want first, second, app in that order; log:\n%s", starts, data)
	}
	if len(prestops) != 3 {
		t.Errorf("preStop hooks ran for %v, want first, second and app; log:\n%s", prestops, data)
	}
	if strings.Join(stops, ",") != "app,second,first" {
		t.Errorf("containers stopped in the order %v, want app, second, first; log:\n%s", stops, data)
	}
}
