package kuberuntime

import (
	"context"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// GetExec asks the runtime for a URL of its streaming server that runs cmd in the container.
func (m *Manager) GetExec(ctx context.Context, id container.ContainerID, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	resp, err := m.runtime.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: id.ID, Cmd: cmd, Tty: tty, Stdin: stdin, Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

// GetAttach asks the runtime for a URL of its streaming server attached to the container.
func (m *Manager) GetAttach(ctx context.Context, id container.ContainerID, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	resp, err := m.runtime.Attach(ctx, &runtimeapi.AttachRequest{
		ContainerId: id.ID, Stdin: stdin, Tty: tty, Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

// GetPortForward asks the runtime for a URL of its streaming server that forwards to ports of
// the pod's ready sandbox.
func (m *Manager) GetPortForward(ctx context.Context, podName, podNamespace string, podUID types.UID, ports []int32) (*url.URL, error) {
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podUIDLabel: string(podUID)},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return nil, fmt.Errorf("finding the sandbox of pod %s/%s: %w", podNamespace, podName, err)
	}
	if len(sandboxes) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no running sandbox", podNamespace, podName)
	}
	resp, err := m.runtime.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sandboxes[0].Id, Port: ports})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}
