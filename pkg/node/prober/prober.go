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
	// connection per probe, as the kubelet's), and redirects only to the same host.
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

// probe runs the probe of kind t on container c (running as id) and returns its verdict. A
// failure is recorded as an Unhealthy event naming the probe and what it saw; an error
// (the probe could not run) is a failure too, as the kubelet counts it.
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
	result, output, err := pb.runProbe(ctx, p, pod, status, c, id)
	ref := &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		FieldPath: fmt.Sprintf("spec.containers{%s}", c.Name),
	}
	if isInitContainer(pod, c.Name) {
		ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", c.Name)
	}
	if err != nil {
		logger.V(1).Info("Probe errored", "err", err)
		pb.recorder.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe errored: %v", t, err)
		return results.Failure
	}
	if result == results.Failure {
		logger.V(1).Info("Probe failed", "output", output)
		pb.recorder.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", t, output)
		return results.Failure
	}
	logger.V(3).Info("Probe succeeded")
	return results.Success
}

// runProbe runs p's handler once, bounded by its timeoutSeconds.
func (pb *prober) runProbe(ctx context.Context, p *v1.Probe, pod *v1.Pod, status v1.PodStatus, c *v1.Container, id container.ContainerID) (results.Result, string, error) {
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
			return results.Failure, "", err
		}
		return pb.httpProbe(ctx, p.HTTPGet, host(p.HTTPGet.Host), port, timeout)
	case p.TCPSocket != nil:
		port, err := container.ResolvePort(p.TCPSocket.Port, c)
		if err != nil {
			return results.Failure, "", err
		}
		return tcpProbe(ctx, host(p.TCPSocket.Host), port, timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return grpcProbe(ctx, host(""), int(p.GRPC.Port), service, timeout)
	}
	return results.Failure, "", fmt.Errorf("missing probe handler for %s:%s", klog.KObj(pod), c.Name)
}

// execProbe runs the command in the container: exit 0 succeeds; its output is the message.
func (pb *prober) execProbe(ctx context.Context, cmd []string, c *v1.Container, id container.ContainerID, timeout time.Duration) (results.Result, string, error) {
	out, err := pb.runner.RunInContainer(ctx, id, expandCommand(cmd, c), timeout)
	if err == nil {
		return results.Success, string(out), nil
	}
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) {
		return results.Failure, string(out), nil
	}
	if errors.Is(err, criclient.ErrCommandTimedOut) || strings.Contains(err.Error(), "timeout") && strings.Contains(err.Error(), "exceeded") {
		return results.Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
	}
	return results.Unknown, "", err
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

// httpProbe GETs the URL: 200 to 399 succeeds, anything else fails with the status code.
func (pb *prober) httpProbe(ctx context.Context, g *v1.HTTPGetAction, host string, port int, timeout time.Duration) (results.Result, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := container.NewHTTPGetRequest(ctx, g, host, port, "kube-probe/"+version.Info().Major+"."+version.Info().Minor)
	if err != nil {
		return results.Failure, "", err
	}
	resp, err := pb.http.Do(req)
	if err != nil {
		// A probe that cannot connect fails; it does not error.
		return results.Failure, err.Error(), nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRespBody))
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		return results.Success, string(body), nil
	}
	return results.Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), nil
}

// tcpProbe succeeds when a connection opens.
func tcpProbe(ctx context.Context, host string, port int, timeout time.Duration) (results.Result, string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return results.Failure, err.Error(), nil
	}
	_ = conn.Close()
	return results.Success, "", nil
}

// grpcProbe asks the gRPC health service: SERVING succeeds.
func grpcProbe(ctx context.Context, host string, port int, service string, timeout time.Duration) (results.Result, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("kube-probe/"+version.Info().Major+"."+version.Info().Minor))
	if err != nil {
		return results.Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		st, _ := grpcstatus.FromError(err)
		if ctx.Err() != nil {
			return results.Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		}
		return results.Failure, fmt.Sprintf("error: health rpc probe failed: %s", st.Message()), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return results.Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return results.Success, "", nil
}

func isInitContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}
