package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestNodeProbes: each probe handler (exec, httpGet with a named port and a header, tcpSocket,
// grpc) and each kind of probe (liveness restarts, readiness flips READY both ways, startup
// holds liveness back), with the events a kubelet records.
func TestNodeProbes(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)

	// A gRPC health server on the host: a hostNetwork pod's probe reaches it at the node's IP.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcServer := grpc.NewServer()
	healthServer := health.NewServer()
	healthpb.RegisterHealthServer(grpcServer, healthServer)
	healthServer.SetServingStatus("berth", healthpb.HealthCheckResponse_SERVING)
	go grpcServer.Serve(lis)
	t.Cleanup(grpcServer.Stop)
	grpcPort := lis.Addr().(*net.TCPAddr).Port

	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %[1]s
    command: ["sh", "-c", "touch /tmp/healthy; sleep 6; rm /tmp/healthy; sleep 3600"]
    livenessProbe:
      exec: {command: ["cat", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 2
---
apiVersion: v1
kind: Pod
metadata: {name: ready}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %[1]s
    command: ["sh", "-c", "mkdir -p /www; httpd -p 8080 -h /www; sleep 10; echo ok > /www/ready; sleep 8; rm /www/ready; sleep 3600"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /ready, port: http, httpHeaders: [{name: X-Probe, value: berth}]}
      periodSeconds: 1
  - name: tcp
    image: %[1]s
    command: ["sh", "-c", "sleep 3600"]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %[1]s
    command: ["sh", "-c", "sleep 12; touch /tmp/started; sleep 3600"]
    startupProbe:
      exec: {command: ["test", "-f", "/tmp/started"]}
      periodSeconds: 1
      failureThreshold: 30
    livenessProbe:
      exec: {command: ["test", "-f", "/tmp/started"]}
      periodSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: grpc}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %[1]s
    command: ["sleep", "3600"]
    readinessProbe:
      grpc: {port: %[2]d, service: berth}
      periodSeconds: 1
`, image, grpcPort), "apply", "-n", ns, "-f", "-")

	ready := func(pod string) string {
		return c.jsonpath(t, ns, "pod/"+pod, `{.status.conditions[?(@.type=="Ready")].status}`)
	}
	readyColumn := func(pod string) string {
		f := strings.Fields(c.must(t, "get", "pod", pod, "-n", ns, "--no-headers"))
		if len(f) < 2 {
			return ""
		}
		return f[1]
	}

	// Startup holds liveness back: not started while its probe fails, no restart, then started.
	c.waitPhase(t, ns, "slow", "Running")
	if got := c.jsonpath(t, ns, "pod/slow", "{.status.containerStatuses[0].started} {.status.containerStatuses[0].ready}"); got != "false false" {
		t.Errorf("slow before its startup probe passed: started, ready = %q, want false false", got)
	}

	// Readiness over HTTP: not ready until /ready exists, ready, then not ready again.
	c.waitPhase(t, ns, "ready", "Running")
	if got := readyColumn("ready"); got != "0/2" && got != "1/2" {
		t.Errorf("ready's READY column before its file exists = %q, want 0/2 or 1/2 (the tcp probe may pass)", got)
	}
	eventually(t, podTimeout, "pod ready to be Ready", func() bool {
		if ready("ready") == "True" {
			return true
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	if got := readyColumn("ready"); got != "2/2" {
		t.Errorf("READY column = %q once both probes pass, want 2/2", got)
	}
	eventually(t, podTimeout, "pod ready to turn not Ready again", func() bool {
		if ready("ready") == "False" {
			return true
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	if got := readyColumn("ready"); got != "1/2" {
		t.Errorf("READY column = %q after /ready went away, want 1/2", got)
	}
	c.waitEvent(t, ns, "ready", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 404")
	if got := c.jsonpath(t, ns, "pod/ready", "{.status.containerStatuses[*].restartCount}"); got != "0 0" {
		t.Errorf("restart counts %q: readiness must never restart a container", got)
	}

	// Liveness: the container restarts once its file is gone, with the kubelet's events.
	c.waitFor(t, ns, "pod/live", "{.status.containerStatuses[0].restartCount}", "to restart", func(v string) bool {
		n, _ := strconv.Atoi(v)
		return n >= 1
	})
	c.waitEvent(t, ns, "live", "Unhealthy", "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory")
	c.waitEvent(t, ns, "live", "Killing", "Container c failed liveness probe, will be restarted")

	// Startup passed, liveness never failed.
	c.waitFor(t, ns, "pod/slow", "{.status.containerStatuses[0].started} {.status.containerStatuses[0].ready}", "to start", func(v string) bool {
		return v == "true true"
	})
	if got := c.jsonpath(t, ns, "pod/slow", "{.status.containerStatuses[0].restartCount}"); got != "0" {
		t.Errorf("slow restarted %s times: liveness ran before the startup probe passed", got)
	}
	c.waitEvent(t, ns, "slow", "Unhealthy", "Startup probe failed: ")

	// gRPC: ready while the service is SERVING, not once it is NOT_SERVING.
	c.waitFor(t, ns, "pod/grpc", `{.status.conditions[?(@.type=="Ready")].status}`, "to be Ready", func(v string) bool { return v == "True" })
	healthServer.SetServingStatus("berth", healthpb.HealthCheckResponse_NOT_SERVING)
	c.waitFor(t, ns, "pod/grpc", `{.status.conditions[?(@.type=="Ready")].status}`, "to turn not Ready", func(v string) bool { return v == "False" })
	c.waitEvent(t, ns, "grpc", "Unhealthy", `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`)
}
