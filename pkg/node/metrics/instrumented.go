package metrics

import (
	"context"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The node agent's CRI clients wrapped to count and time every call the sync loop makes
// (the kubelet's instrumentedRuntimeService), under the kubelet's operation_type names.
// Calls not listed here pass through uncounted.

type instrumentedRuntime struct {
	internalapi.RuntimeService
	m *Metrics
}

type instrumentedImages struct {
	internalapi.ImageManagerService
	m *Metrics
}

// InstrumentRuntime returns r counting its calls into m (r itself when m is nil).
func InstrumentRuntime(r internalapi.RuntimeService, m *Metrics) internalapi.RuntimeService {
	if m == nil {
		return r
	}
	return &instrumentedRuntime{RuntimeService: r, m: m}
}

// InstrumentImages returns i counting its calls into m (i itself when m is nil).
func InstrumentImages(i internalapi.ImageManagerService, m *Metrics) internalapi.ImageManagerService {
	if m == nil {
		return i
	}
	return &instrumentedImages{ImageManagerService: i, m: m}
}

func (r *instrumentedRuntime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	defer r.m.ObserveRuntimeOperation("version", time.Now(), nil)
	return r.RuntimeService.Version(ctx, apiVersion)
}

func (r *instrumentedRuntime) Status(ctx context.Context, verbose bool) (resp *runtimeapi.StatusResponse, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("status", start, err) }(time.Now())
	return r.RuntimeService.Status(ctx, verbose)
}

func (r *instrumentedRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (id string, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("run_podsandbox", start, err) }(time.Now())
	return r.RuntimeService.RunPodSandbox(ctx, config, handler)
}

func (r *instrumentedRuntime) StopPodSandbox(ctx context.Context, id string) (err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("stop_podsandbox", start, err) }(time.Now())
	return r.RuntimeService.StopPodSandbox(ctx, id)
}

func (r *instrumentedRuntime) RemovePodSandbox(ctx context.Context, id string) (err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("remove_podsandbox", start, err) }(time.Now())
	return r.RuntimeService.RemovePodSandbox(ctx, id)
}

func (r *instrumentedRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (resp *runtimeapi.PodSandboxStatusResponse, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("podsandbox_status", start, err) }(time.Now())
	return r.RuntimeService.PodSandboxStatus(ctx, id, verbose)
}

func (r *instrumentedRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) (out []*runtimeapi.PodSandbox, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("list_podsandbox", start, err) }(time.Now())
	return r.RuntimeService.ListPodSandbox(ctx, filter)
}

func (r *instrumentedRuntime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (id string, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("create_container", start, err) }(time.Now())
	return r.RuntimeService.CreateContainer(ctx, sandboxID, config, sandboxConfig)
}

func (r *instrumentedRuntime) StartContainer(ctx context.Context, id string) (err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("start_container", start, err) }(time.Now())
	return r.RuntimeService.StartContainer(ctx, id)
}

func (r *instrumentedRuntime) StopContainer(ctx context.Context, id string, timeout int64) (err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("stop_container", start, err) }(time.Now())
	return r.RuntimeService.StopContainer(ctx, id, timeout)
}

func (r *instrumentedRuntime) RemoveContainer(ctx context.Context, id string) (err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("remove_container", start, err) }(time.Now())
	return r.RuntimeService.RemoveContainer(ctx, id)
}

func (r *instrumentedRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) (out []*runtimeapi.Container, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("list_containers", start, err) }(time.Now())
	return r.RuntimeService.ListContainers(ctx, filter)
}

func (r *instrumentedRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (resp *runtimeapi.ContainerStatusResponse, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("container_status", start, err) }(time.Now())
	return r.RuntimeService.ContainerStatus(ctx, id, verbose)
}

func (r *instrumentedRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("exec_sync", start, err) }(time.Now())
	return r.RuntimeService.ExecSync(ctx, id, cmd, timeout)
}

func (r *instrumentedRuntime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) (out []*runtimeapi.ContainerStats, err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("list_container_stats", start, err) }(time.Now())
	return r.RuntimeService.ListContainerStats(ctx, filter)
}

func (r *instrumentedRuntime) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) (err error) {
	defer func(start time.Time) { r.m.ObserveRuntimeOperation("update_runtime_config", start, err) }(time.Now())
	return r.RuntimeService.UpdateRuntimeConfig(ctx, config)
}

func (i *instrumentedImages) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) (out []*runtimeapi.Image, err error) {
	defer func(start time.Time) { i.m.ObserveRuntimeOperation("list_images", start, err) }(time.Now())
	return i.ImageManagerService.ListImages(ctx, filter)
}

func (i *instrumentedImages) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (resp *runtimeapi.ImageStatusResponse, err error) {
	defer func(start time.Time) { i.m.ObserveRuntimeOperation("image_status", start, err) }(time.Now())
	return i.ImageManagerService.ImageStatus(ctx, image, verbose)
}

func (i *instrumentedImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (ref string, err error) {
	defer func(start time.Time) { i.m.ObserveRuntimeOperation("pull_image", start, err) }(time.Now())
	return i.ImageManagerService.PullImage(ctx, image, auth, sandbox)
}

func (i *instrumentedImages) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) (err error) {
	defer func(start time.Time) { i.m.ObserveRuntimeOperation("remove_image", start, err) }(time.Now())
	return i.ImageManagerService.RemoveImage(ctx, image)
}

func (i *instrumentedImages) ImageFsInfo(ctx context.Context) (resp *runtimeapi.ImageFsInfoResponse, err error) {
	defer func(start time.Time) { i.m.ObserveRuntimeOperation("image_fs_info", start, err) }(time.Now())
	return i.ImageManagerService.ImageFsInfo(ctx)
}
