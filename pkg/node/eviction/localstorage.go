package eviction

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/stats"
	"github.com/berth-cluster/berth/pkg/node/volume"
)

// Local storage limits, checked in the kubelet's order: an emptyDir over its sizeLimit, the
// pod over the sum of its containers' ephemeral-storage limits (containers' writable layers
// and logs plus its local volumes), a container over its own limit (writable layer and logs).

// The signals local storage evictions are counted under (kubelet_evictions).
const (
	signalEmptyDirFsLimit           = "emptydirfs.limit"
	signalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	signalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
)

// localStorageExceeded reports the first local storage limit pod is over, with its signal
// and the kubelet's words.
func (m *Manager) localStorageExceeded(ctx context.Context, pod *v1.Pod, usage podUsage) (string, string, bool) {
	if msg, over := m.emptyDirOverLimit(ctx, pod); over {
		return signalEmptyDirFsLimit, msg, true
	}
	var podLimit resource.Quantity
	limited := false
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok {
			podLimit.Add(q)
			limited = true
		}
	}
	if !limited || usage.containers == nil {
		return "", "", false
	}
	usage.volumes = m.localVolumesUsage(ctx, pod)
	if usage.total(v1.ResourceEphemeralStorage) > podLimit.Value() {
		return signalEphemeralPodFsLimit, fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", podLimit.String()), true
	}
	for _, c := range pod.Spec.Containers {
		limit, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
		if !ok {
			continue
		}
		if used, measured := usage.containerUse(c.Name, v1.ResourceEphemeralStorage); measured && used > limit.Value() {
			return signalEphemeralContainerFsLimit, fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", c.Name, limit.String()), true
		}
	}
	return "", "", false
}

// emptyDirOverLimit reports the first disk-backed emptyDir volume of pod that uses more
// than its sizeLimit.
func (m *Manager) emptyDirOverLimit(ctx context.Context, pod *v1.Pod) (string, bool) {
	for _, vol := range pod.Spec.Volumes {
		ed := vol.EmptyDir
		if ed == nil || ed.SizeLimit == nil || ed.SizeLimit.IsZero() || ed.Medium == v1.StorageMediumMemory {
			continue
		}
		used, err := stats.DiskUsage(m.volumeDir(pod, volume.EmptyDirPlugin, vol.Name))
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Measuring an emptyDir", "pod", klog.KObj(pod), "volume", vol.Name, "err", err)
			continue
		}
		if used > ed.SizeLimit.Value() {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", vol.Name, ed.SizeLimit.String()), true
		}
	}
	return "", false
}

// localVolumesUsage is the disk the pod's local volumes take: disk-backed emptyDirs and
// configMaps, as the kubelet counts them.
func (m *Manager) localVolumesUsage(ctx context.Context, pod *v1.Pod) int64 {
	var total int64
	for _, vol := range pod.Spec.Volumes {
		var plugin string
		switch {
		case vol.EmptyDir != nil && vol.EmptyDir.Medium != v1.StorageMediumMemory:
			plugin = volume.EmptyDirPlugin
		case vol.ConfigMap != nil:
			plugin = volume.ConfigMapPlugin
		default:
			continue
		}
		used, err := stats.DiskUsage(m.volumeDir(pod, plugin, vol.Name))
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Measuring a local volume", "pod", klog.KObj(pod), "volume", vol.Name, "err", err)
			continue
		}
		total += used
	}
	return total
}

func (m *Manager) volumeDir(pod *v1.Pod, plugin, name string) string {
	return volume.Dir(m.podDir(pod.UID), plugin, name)
}
