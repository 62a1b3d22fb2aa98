// Package prober runs the containers' startup, liveness and readiness probes (seed 000's
// probeManager): one worker per probe of each container, whose verdicts go to the results
// Managers that syncLoopIteration watches.
package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	criclient "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/prober/results"
	"github.com/berth-cluster/berth/pkg/version"
)

// probeType is which of a container's probes.
type probeType int

const (
	liveness probeType = iota
	readiness
	startup
)

func (t probeType) String() string {
	switch t {
	case liveness:
		return "Liveness"
	case readiness:
		return "Readiness"
	default:
		return "Startup"
	}
}

// maxRespBody is how much of an HTTP probe's answer is read, and shown when it fails.
const maxRespBody = 10 * 1024

// CommandRunner runs a command in a running container (the runtime's RunInContainer);
// a non-zero exit is a k8s.io/utils/exec.ExitError.
type CommandRunner interface {
	RunInContainer(ctx context.Context, id container.ContainerID, cmd []string, timeout time.Duration) ([]byte, error)
}

// prober runs one probe and tells the container's events what failed.
type prober struct {
	runner   CommandRunner
	recorder record.EventRecorder
	http     *http.Client
}

func newProber(runner CommandRunner, recorder record.EventRecorder) *prober {
	// Probes go to pods' own addresses: no proxy, no certificate checks, no keep-alive (a
	// connection per probe, as the kubelet's), and redirects followed only to the same host:
	// a redirect to another host is the answer (httpProbe makes it a warning).
	transport := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
	}
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	return &prober{runner: runner, recorder: recorder, http: client}
}

// outcome is what one run of a probe's handler saw, before the worker's thresholds (the
// kubelet's probe.Result; its words appear in the events).
type outcome string

const (
	outcomeSuccess outcome = "success"
	// outcomeWarning is a success with something to say: an HTTP probe answered with a
	// redirect to another host, which is not followed.
	outcomeWarning outcome = "warning"
	outcomeFailure outcome = "failure"
	outcomeUnknown outcome = "unknown"
)

// maxProbeRetries is how many times a probe that errored (could not run) is run again at once.
const maxProbeRetries = 3

// probe runs the probe of kind t on container c (running as id) and returns its verdict. A
// failure is recorded as an Unhealthy event naming the probe and what it saw, a success with
// a warning as a ProbeWarning event. A probe that errored (could not run, three times) is an
// Unhealthy event too, and its verdict is Unknown: the worker throws it away, as the kubelet
// does.
func (pb *prober) probe(ctx context.Context, t probeType, pod *v1.Pod, status v1.PodStatus, c *v1.Container, id container.ContainerID) results.Result {
	var p *v1.Probe
	switch t {
	case liveness:
		p = c.LivenessProbe
	case readiness:
		p = c.ReadinessProbe
	case startup:
		p = c.StartupProbe
	}
	if p == nil {
		return results.Success
	}
	logger := klog.FromContext(ctx).WithValues("probeType", t, "pod", klog.KObj(pod), "containerName", c.Name)
	var (
		result outcome
		output string
		err    error
	)
	for i := 0; i < maxProbeRetries; i++ {
		if result, output, err = pb.runProbe(ctx, p, pod, status, c, id); err == nil {
			break
		}
	}
	ref := containerRef(pod, c.Name)
	if err != nil {
		logger.V(1).Info("Probe errored", "probeResult", result, "err", err)
		pb.recorder.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe errored and resulted in %s state: %s", t, result, err)
		return results.Unknown
	}
	switch result {
	case outcomeSuccess:
		logger.V(3).Info("Probe succeeded")
		return results.Success
	case outcomeWarning:
		logger.V(3).Info("Probe succeeded with a warning", "output", output)
		pb.recorder.Eventf(ref, v1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", t, output)
		return results.Success
	case outcomeFailure:
		logger.V(1).Info("Probe failed", "output", output)
		pb.recorder.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", t, output)
		return results.Failure
	default:
		logger.V(1).Info("Probe unknown without error", "probeResult", result)
		return results.Failure
	}
}

// containerRef is the object reference of a container's events: spec.containers{name}, or
// spec.initContainers{name} for an init container (a sidecar).
func containerRef(pod *v1.Pod, name string) *v1.ObjectReference {
	ref := &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		FieldPath: fmt.Sprintf("spec.containers{%s}", name),
	}
	if isInitContainer(pod, name) {
		ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", name)
	}
	return ref
}

// runProbe runs p's handler once, bounded by its timeoutSeconds.
func (pb *prober) runProbe(ctx context.Context, p *v1.Probe, pod *v1.Pod, status v1.PodStatus, c *v1.Container, id container.ContainerID) (outcome, string, error) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	host := func(h string) string {
		if h == "" {
			return status.PodIP
		}
		return h
	}
	switch {
	case p.Exec != nil:
		return pb.execProbe(ctx, p.Exec.Command, c, id, timeout)
	case p.HTTPGet != nil:
		port, err := container.ResolvePort(p.HTTPGet.Port, c)
		if err != nil {
			return outcomeUnknown, "", err
		}
		return pb.httpProbe(ctx, p.HTTPGet, host(p.HTTPGet.Host), port, timeout)
	case p.TCPSocket != nil:
		port, err := container.ResolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return outcomeUnknown, "", err
		}
		return tcpProbe(ctx, host(p.TCPSocket.Host), port, timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return grpcProbe(ctx, host(""), int(p.GRPC.Port), service, timeout)
	}
	return outcomeUnknown, "", fmt.Errorf("missing probe handler for %s:%s", klog.KObj(pod), c.Name)
}

// execProbe runs the command in the container: exit 0 succeeds; its output is the message.
func (pb *prober) execProbe(ctx context.Context, cmd []string, c *v1.Container, id container.ContainerID, timeout time.Duration) (outcome, string, error) {
	out, err := pb.runner.RunInContainer(ctx, id, expandCommand(cmd, c), timeout)
	if err == nil {
		return outcomeSuccess, string(out), nil
	}
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) {
		return outcomeFailure, string(out), nil
	}
	if errors.Is(err, criclient.ErrCommandTimedOut) || strings.Contains(err.Error(), "timeout") && strings.Contains(err.Error(), "exceeded") {
		return outcomeFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
	}
	return outcomeUnknown, "", err
}

// expandCommand expands $(VAR) with the container's plain env values, as the kubelet does for
// exec probes.
func expandCommand(cmd []string, c *v1.Container) []string {
	vars := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = container.Expand(arg, container.LookupIn(vars))
	}
	return out
}

// httpProbe GETs the URL: 200 to 299 succeeds; 300 to 399, a redirect that was not followed
// (it goes to another host), succeeds with a warning that shows the answer's body; anything
// else fails with the status code (and never the body, which may hold secrets).
func (pb *prober) httpProbe(ctx context.Context, g *v1.HTTPGetAction, host string, port int, timeout time.Duration) (outcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := container.NewHTTPGetRequest(ctx, g, host, port, "kube-probe/"+version.Info().Major+"."+version.Info().Minor)
	if err != nil {
		return outcomeUnknown, "", err
	}
	resp, err := pb.http.Do(req)
	if err != nil {
		// A probe that cannot connect fails; it does not error.
		return outcomeFailure, err.Error(), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRespBody))
	if err != nil {
		return outcomeFailure, "", err
	}
	switch {
	case resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusMultipleChoices:
		return outcomeSuccess, string(body), nil
	case resp.StatusCode >= http.StatusMultipleChoices && resp.StatusCode < http.StatusBadRequest:
		return outcomeWarning, fmt.Sprintf("Probe terminated redirects, Response body: %s", body), nil
	}
	return outcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), nil
}

// tcpProbe succeeds when a connection opens.
func tcpProbe(ctx context.Context, host string, port int, timeout time.Duration) (outcome, string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return outcomeSuccess, "", nil
}

// grpcProbe asks the gRPC health service: SERVING succeeds.
func grpcProbe(ctx context.Context, host string, port int, service string, timeout time.Duration) (outcome, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("kube-probe/"+version.Info().Major+"."+version.Info().Minor))
	if err != nil {
		return outcomeFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		st, _ := grpcstatus.FromError(err)
		if ctx.Err() != nil {
			return outcomeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		}
		return outcomeFailure, fmt.Sprintf("error: health rpc probe failed: %s", st.Message()), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return outcomeSuccess, "", nil
}

func isInitContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}
