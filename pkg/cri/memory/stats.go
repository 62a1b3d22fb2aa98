package memory

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// zero is the value of every simulated usage: processes that do not run use nothing. It is
// shared by all responses, which callers only read.
var zero = &runtimeapi.UInt64Value{}

// ListContainerStats reports zero usage for every running container that filter selects,
// with its attributes, so that the node agent's summary API has an entry per container.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	var out []*runtimeapi.ContainerStats
	r.eachContainer(filter.GetId(), filter.GetPodSandboxId(), func(c *container) {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && matchLabels(c.labels, filter.GetLabelSelector()) {
			out = append(out, r.stats(c, now))
		}
	})
	return out, nil
}

// ContainerStats reports a container's (zero) usage; an unknown id is NotFound.
func (r *Runtime) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	c, ok := r.containers[containerID]
	if !ok {
		return nil, notFound("container", containerID)
	}
	return r.stats(c, now), nil
}

func (r *Runtime) stats(c *container, now int64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id:          c.id,
			Metadata:    c.metadata,
			Labels:      c.labels,
			Annotations: c.annotations,
		},
		Cpu: &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: zero, UsageNanoCores: zero},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp:       now,
			WorkingSetBytes: zero,
			UsageBytes:      zero,
			RssBytes:        zero,
			PageFaults:      zero,
			MajorPageFaults: zero,
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp:  now,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.mountpoint},
			UsedBytes:  zero,
			InodesUsed: zero,
		},
	}
}

// The pod-level stats and metrics calls are Unimplemented, as in containerd 1.6; the node
// agent builds pod stats from ListContainerStats.

func (r *Runtime) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	return nil, unimplemented("PodSandboxStats")
}

func (r *Runtime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return nil, unimplemented("ListPodSandboxStats")
}

func (r *Runtime) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	return nil, unimplemented("ListMetricDescriptors")
}

func (r *Runtime) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	return nil, unimplemented("ListPodSandboxMetrics")
}
