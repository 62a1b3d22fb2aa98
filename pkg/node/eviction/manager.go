// Package eviction is the node agent's eviction manager (seed 000's evictionManager, started
// in Run with the other managers). Every monitoring interval it reads the stats Summary and
//
//   - evicts the pods over their local storage limits: an emptyDir over its sizeLimit, a
//     container over its ephemeral-storage limit, a pod over the sum of its containers' limits;
//   - compares the signals (memory.available, nodefs.available, nodefs.inodesFree,
//     imagefs.available, imagefs.inodesFree, pid.available) with the hard thresholds, reports
//     MemoryPressure, DiskPressure and PIDPressure to the node status (kept for the pressure
//     transition period after the signal recovers), and
//   - under pressure first reclaims node-level resources (dead containers, unused images, for
//     the disk signals), then evicts the one pod ranked first for the starved resource.
//
// Its Admit refuses new pods under pressure, as the kubelet's eviction admit handler does.
package eviction

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/metrics"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// MonitoringInterval is how often usage is measured (the kubelet's evictionMonitoringPeriod).
const MonitoringInterval = 10 * time.Second

// DefaultPressureTransitionPeriod is how long a pressure condition stays after its signal
// recovered (the KubeletConfiguration's evictionPressureTransitionPeriod).
const DefaultPressureTransitionPeriod = 5 * time.Minute

// Reason is the status reason of an evicted pod.
const Reason = "Evicted"

// EvictFunc stops a pod at once and marks it Failed with Reason and the message.
type EvictFunc func(pod *v1.Pod, message string)

// Config is what the manager needs from the node agent.
type Config struct {
	// Thresholds are the hard eviction thresholds (ParseThresholds).
	Thresholds []Threshold
	// PressureTransitionPeriod: see DefaultPressureTransitionPeriod.
	PressureTransitionPeriod time.Duration
	// Summary reads the node's and pods' usage (the stats provider).
	Summary func(ctx context.Context) (*statsapi.Summary, error)
	// DeleteUnusedContainers and DeleteUnusedImages reclaim disk before any pod is evicted
	// for a disk signal (the container and image garbage collectors); either may be nil.
	DeleteUnusedContainers func(ctx context.Context) error
	DeleteUnusedImages     func(ctx context.Context) error
	// Recorder and Node receive the EvictionThresholdMet events.
	Recorder record.EventRecorder
	Node     *v1.ObjectReference
	Clock    clock.PassiveClock
	// Metrics counts evictions by signal (kubelet_evictions); nil counts nothing.
	Metrics *metrics.Metrics
}

// Manager measures usage and evicts pods over their limits or under node pressure.
type Manager struct {
	cfg        Config
	activePods func() []*v1.Pod
	podDir     func(uid types.UID) string
	evict      EvictFunc

	mu sync.Mutex
	// lastObserved is when each pressure condition's signal was last below its threshold.
	lastObserved map[v1.NodeConditionType]time.Time
	// conditions are the pressure conditions reported now, in signal order.
	conditions []v1.NodeConditionType
}

// NewManager returns a Manager over the active pods; podDir is a pod's directory under the
// node agent's root (its volumes live in it).
func NewManager(activePods func() []*v1.Pod, podDir func(types.UID) string, evict EvictFunc, cfg Config) *Manager {
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Manager{cfg: cfg, activePods: activePods, podDir: podDir, evict: evict, lastObserved: map[v1.NodeConditionType]time.Time{}}
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
		// A pass that panics is retried at the next interval.
		_ = panics.Call(ctx, Component, func() error { m.synchronize(ctx); return nil })
	}
}

// synchronize is one monitoring pass: local storage limits first (a pod over its own limit
// goes whatever the node's state), then the node's signals.
func (m *Manager) synchronize(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if m.cfg.Summary == nil {
		return
	}
	summary, err := m.cfg.Summary(ctx)
	if err != nil {
		logger.Error(err, "Eviction manager: reading the stats summary")
		return
	}
	usage := podUsageOf(summary)
	pods := m.activePods()
	var rest []*v1.Pod
	for _, pod := range pods {
		if signal, msg, over := m.localStorageExceeded(ctx, pod, usage[pod.UID]); over {
			logger.Info("Evicting pod over its local storage limit", "pod", klog.KObj(pod), "message", msg)
			m.cfg.Metrics.ObserveEviction(signal)
			m.evict(pod, msg)
			continue
		}
		rest = append(rest, pod)
	}
	// The kubelet evicts nothing more in a pass that evicted for local storage.
	if len(rest) < len(pods) {
		return
	}
	m.reclaim(ctx, summary, usage, rest)
}

// IsUnderMemoryPressure, IsUnderDiskPressure and IsUnderPIDPressure report the conditions
// (nodestatus's PressureSource).
func (m *Manager) IsUnderMemoryPressure() bool { return m.hasCondition(v1.NodeMemoryPressure) }
func (m *Manager) IsUnderDiskPressure() bool   { return m.hasCondition(v1.NodeDiskPressure) }
func (m *Manager) IsUnderPIDPressure() bool    { return m.hasCondition(v1.NodePIDPressure) }

func (m *Manager) hasCondition(c v1.NodeConditionType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, have := range m.conditions {
		if have == c {
			return true
		}
	}
	return false
}

// Conditions are the pressure conditions reported now.
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]v1.NodeConditionType(nil), m.conditions...)
}

// Component names the eviction manager in berth_recovered_panics_total.
const Component = "eviction"
