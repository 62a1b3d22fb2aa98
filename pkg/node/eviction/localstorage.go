// Package eviction is the node agent's eviction manager (seed 000's evictionManager). This
// manager enforces local storage limits (a pod whose emptyDir volume outgrows its sizeLimit is
// evicted, as the kubelet's localStorageEviction does) and the memory.available hard threshold.
// The other node-pressure signals (nodefs, imagefs, pid) come with a later part.
package eviction

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// MonitoringInterval is how often usage is measured (the kubelet's evictionMonitoringPeriod).
const MonitoringInterval = 10 * time.Second

// Reason is the status reason of an evicted pod.
const Reason = "Evicted"

// EvictFunc stops a pod at once and marks it Failed with Reason and the message.
type EvictFunc func(pod *v1.Pod, message string)

// Manager measures the pods' local storage and evicts the ones over their limits.
type Manager struct {
	activePods func() []*v1.Pod
	podDir     func(uid types.UID) string
	evict      EvictFunc

	memory         *MemorySignals
	memoryPressure atomic.Bool
}

// NewManager returns a Manager over the active pods; podDir is a pod's directory under the
// node agent's root (its volumes live in it).
func NewManager(activePods func() []*v1.Pod, podDir func(types.UID) string, evict EvictFunc) *Manager {
	return &Manager{activePods: activePods, podDir: podDir, evict: evict}
}

// Run measures every MonitoringInterval until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(MonitoringInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.synchronize(ctx)
	}
}

// synchronize evicts the pods over their local storage limits, then, under memory pressure,
// the first-ranked pod.
func (m *Manager) synchronize(ctx context.Context) {
	pods := m.activePods()
	var rest []*v1.Pod
	for _, pod := range pods {
		if msg, over := m.emptyDirOverLimit(ctx, pod); over {
			klog.FromContext(ctx).Info("Evicting pod over its local storage limit", "pod", klog.KObj(pod), "message", msg)
			m.evict(pod, msg)
			continue
		}
		rest = append(rest, pod)
	}
	m.reclaimMemory(ctx, rest)
}

// emptyDirOverLimit reports the first disk-backed emptyDir volume of pod that uses more
// than its sizeLimit, in the kubelet's words.
func (m *Manager) emptyDirOverLimit(ctx context.Context, pod *v1.Pod) (string, bool) {
	for _, vol := range pod.Spec.Volumes {
		ed := vol.EmptyDir
		if ed == nil || ed.SizeLimit == nil || ed.SizeLimit.IsZero() || ed.Medium == v1.StorageMediumMemory {
			continue
		}
		dir := filepath.Join(m.podDir(pod.UID), "volumes", "kubernetes.io~empty-dir", vol.Name)
		used, err := diskUsage(dir)
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

// diskUsage is the space the files under dir take on disk, as du counts it.
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}
