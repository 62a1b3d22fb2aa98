// Package cri connects berth's node agent to a container runtime over the CRI (seed 000's
// initializeModules and updateRuntimeUp talk to the runtime through it; seed 001's sandbox
// and containers are created through it) and loads images into the runtime without a
// registry: berth's sandbox ("pause") image and `berth image import` archives.
//
// The runtimes themselves live below: containerd/ starts containerd, pause/ builds the
// sandbox image, testimage/ builds busybox images and serves them from a loopback registry.
package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
)

// RequestTimeout bounds each CRI call (RunPodSandbox gets twice this; PullImage only its
// context), as the kubelet's runtimeRequestTimeout does by default.
const RequestTimeout = 2 * time.Minute

// Connect dials the CRI runtime and image services on endpoint (a unix:// URL or a socket
// path) and checks that both answer (Version, ImageFsInfo) within ctx and RequestTimeout.
// Close both when done.
func Connect(ctx context.Context, endpoint string) (runtime internalapi.RuntimeService, images internalapi.ImageManagerService, err error) {
	endpoint = NormalizeEndpoint(endpoint)
	runtime, err = remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(RequestTimeout).
		Build(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the CRI runtime service on %s: %w", endpoint, err)
	}
	images, err = remote.NewRemoteImageServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(RequestTimeout).
		Build(ctx)
	if err != nil {
		_ = runtime.Close(ctx)
		return nil, nil, fmt.Errorf("connect to the CRI image service on %s: %w", endpoint, err)
	}
	return runtime, images, nil
}

// NormalizeEndpoint turns a bare socket path into a unix:// URL; URLs pass unchanged.
func NormalizeEndpoint(endpoint string) string {
	if strings.Contains(endpoint, "://") {
		return endpoint
	}
	return "unix://" + endpoint
}

// socketPath is the file of a unix endpoint, or an error for other schemes.
func socketPath(endpoint string) (string, error) {
	endpoint = NormalizeEndpoint(endpoint)
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || path == "" {
		return "", fmt.Errorf("endpoint %q is not a unix socket", endpoint)
	}
	return path, nil
}
