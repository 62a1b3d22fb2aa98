package kuberuntime

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/version"
)

// runHandler runs a lifecycle hook of a container: a command in the container (ExecSync),
// an HTTP GET (to the pod's IP unless the hook names a host), or a sleep. ctx bounds it.
// It returns a message and the error when the hook fails.
func (m *Manager) runHandler(ctx context.Context, id container.ContainerID, pod *v1.Pod, c *v1.Container, h *v1.LifecycleHandler, podIPs []string) (string, error) {
	logger := klog.FromContext(ctx)
	switch {
	case h.Exec != nil:
		timeout := time.Duration(0)
		if deadline, ok := ctx.Deadline(); ok {
			timeout = time.Until(deadline)
		}
		stdout, stderr, err := m.runtime.ExecSync(ctx, id.ID, h.Exec.Command, timeout)
		if err != nil {
			output := string(append(stdout, stderr...))
			logger.V(1).Info("Exec lifecycle hook for Container in Pod failed", "execCommand", h.Exec.Command, "containerName", c.Name, "pod", klog.KObj(pod), "message", output, "err", err)
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podDesc(pod), err, output), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := m.runHTTPHandler(ctx, pod, c, h.HTTPGet, podIPs); err != nil {
			logger.V(1).Info("HTTP lifecycle hook for Container in Pod failed", "path", h.HTTPGet.Path, "containerName", c.Name, "pod", klog.KObj(pod), "err", err)
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podDesc(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
			return "", nil
		case <-ctx.Done():
			err := fmt.Errorf("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, c.Name, podDesc(pod), err), err
		}
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// runHTTPHandler GETs the hook's URL; any answer below 400 succeeds. An HTTPS hook answered
// in plain HTTP is retried over HTTP, as the kubelet does.
func (m *Manager) runHTTPHandler(ctx context.Context, pod *v1.Pod, c *v1.Container, g *v1.HTTPGetAction, podIPs []string) error {
	host := g.Host
	if host == "" {
		if len(podIPs) == 0 {
			return fmt.Errorf("failed to find networking container: pod %s has no IP", podDesc(pod))
		}
		host = podIPs[0]
	}
	port, err := container.ResolvePort(g.Port, c)
	if err != nil {
		return err
	}
	req, err := container.NewHTTPGetRequest(ctx, g, host, port, "kube-lifecycle/"+version.Info().Major+"."+version.Info().Minor)
	if err != nil {
		return err
	}
	scheme := req.URL.Scheme
	err = m.doHookRequest(req)
	if err != nil && scheme == "https" && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		if m.doHookRequest(retry) == nil {
			m.recordPodEvent(ctx, pod, v1.EventTypeWarning, "LifecycleHTTPFallback", "request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", req.URL.Host)
			return nil
		}
	}
	return err
}

func (m *Manager) doHookRequest(req *http.Request) error {
	resp, err := m.hookClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10*1024))
	if resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("HTTP lifecycle hook %s returned status %d", req.URL, resp.StatusCode)
	}
	return nil
}

// RunInContainer runs a command in a running container and returns its output, stdout then
// stderr; a command that exits non-zero is an error carrying its exit code
// (k8s.io/utils/exec.ExitError). timeout 0 means none. Exec probes and hooks use it.
func (m *Manager) RunInContainer(ctx context.Context, id container.ContainerID, cmd []string, timeout time.Duration) ([]byte, error) {
	stdout, stderr, err := m.runtime.ExecSync(ctx, id.ID, cmd, timeout)
	return append(stdout, stderr...), err
}
