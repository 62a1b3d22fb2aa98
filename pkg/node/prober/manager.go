package prober

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/prober/results"
)

// StatusProvider gives the latest status the node agent generated for a pod (the status
// manager's): workers find their container's ID and state in it.
type StatusProvider interface {
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
}

// Manager owns the probe workers: AddPod starts one per probe of each container, RemovePod
// and CleanupPods stop them. Its results Managers are read by syncLoopIteration (their
// Updates), by the runtime (liveness and startup kill containers) and by the status generator
// (Started, Ready).
type Manager struct {
	ctx    context.Context
	status StatusProvider
	prober *prober
	// terminationRequested says a pod is being stopped: it is no longer ready, and its
	// liveness no longer matters.
	terminationRequested func(types.UID) bool
	start                time.Time

	liveness, readiness, startup results.Manager

	mu      sync.Mutex
	workers map[probeKey]*worker
}

type probeKey struct {
	podUID    types.UID
	container string
	probeType probeType
}

// NewManager returns a Manager whose workers run until ctx ends.
func NewManager(ctx context.Context, status StatusProvider, runner CommandRunner, recorder record.EventRecorder, terminationRequested func(types.UID) bool) *Manager {
	return &Manager{
		ctx: ctx, status: status, prober: newProber(runner, recorder),
		terminationRequested: terminationRequested,
		start:                time.Now(),
		liveness:             results.NewManager(),
		readiness:            results.NewManager(),
		startup:              results.NewManager(),
		workers:              map[probeKey]*worker{},
	}
}

// LivenessUpdates, ReadinessUpdates and StartupUpdates are the result channels of
// syncLoopIteration.
func (m *Manager) LivenessUpdates() <-chan results.Update  { return m.liveness.Updates() }
func (m *Manager) ReadinessUpdates() <-chan results.Update { return m.readiness.Updates() }
func (m *Manager) StartupUpdates() <-chan results.Update   { return m.startup.Updates() }

// AddPod starts the workers of a pod's probes (app containers and sidecars); a probe that
// already has one is left alone.
func (m *Manager) AddPod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	add := func(c v1.Container) {
		for t, p := range map[probeType]*v1.Probe{startup: c.StartupProbe, readiness: c.ReadinessProbe, liveness: c.LivenessProbe} {
			if p == nil {
				continue
			}
			key := probeKey{pod.UID, c.Name, t}
			if _, ok := m.workers[key]; ok {
				continue
			}
			w := newWorker(m, t, pod, c)
			m.workers[key] = w
			go w.run(m.ctx)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c)
	}
}

// RemovePod stops the workers of a pod.
func (m *Manager) RemovePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.podUID == pod.UID {
			w.stopNow()
		}
	}
}

// CleanupPods stops the workers of pods not in desired.
func (m *Manager) CleanupPods(desired map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if !desired[key.podUID] {
			w.stopNow()
		}
	}
}

func (m *Manager) removeWorker(uid types.UID, name string, t probeType) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.workers, probeKey{uid, name, t})
}

func (m *Manager) deleting(uid types.UID) bool {
	return m.terminationRequested != nil && m.terminationRequested(uid)
}

func (m *Manager) hasWorker(uid types.UID, name string, t probeType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.workers[probeKey{uid, name, t}]
	return ok
}

// Started says whether a running container passed its startup probe (podstatus's
// ProbeResults). A container without a startup probe is not known.
func (m *Manager) Started(podUID types.UID, name, containerID string) (bool, bool) {
	if r, ok := m.startup.Get(container.ParseContainerID(containerID)); ok {
		return r == results.Success, true
	}
	if m.hasWorker(podUID, name, startup) {
		return false, true
	}
	return false, false
}

// Ready says whether a running container passes its readiness probe; until it has run,
// it does not.
func (m *Manager) Ready(podUID types.UID, name, containerID string) (bool, bool) {
	if r, ok := m.readiness.Get(container.ParseContainerID(containerID)); ok {
		return r == results.Success, true
	}
	if m.hasWorker(podUID, name, readiness) {
		return false, true
	}
	return false, false
}

// Liveness and Startup are the verdicts that kill containers (the runtime's ProbeResults).
func (m *Manager) Liveness(id container.ContainerID) (results.Result, bool) {
	return m.liveness.Get(id)
}
func (m *Manager) Startup(id container.ContainerID) (results.Result, bool) { return m.startup.Get(id) }

// Trigger probes a pod's containers at once, e.g. when one just started or passed its
// startup probe, so that readiness need not wait a period.
func (m *Manager) Trigger(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.podUID == podUID {
			select {
			case w.manualTrigger <- struct{}{}:
			default:
			}
		}
	}
}
