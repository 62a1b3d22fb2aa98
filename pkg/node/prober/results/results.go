// Package results holds the probes' latest verdicts, one Manager per kind of probe (seed
// 000's livenessManager, readinessManager and startupManager). The prober's workers write
// them; syncLoopIteration reads each Manager's Updates, and the runtime and the status
// generator read Get.
package results

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// Result is a probe's verdict.
type Result int

const (
	// Unknown: no verdict yet (a startup probe before its first run).
	Unknown Result = iota - 1
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	default:
		return "UNKNOWN"
	}
}

// Update is a changed verdict on a container.
type Update struct {
	ContainerID container.ContainerID
	Result      Result
	PodUID      types.UID
}

// Manager keeps the verdict of each container.
type Manager interface {
	// Get returns the verdict on a container, if there is one.
	Get(id container.ContainerID) (Result, bool)
	// Set records a verdict; a changed one is also sent on Updates.
	Set(id container.ContainerID, result Result, pod *v1.Pod)
	// Remove forgets a container.
	Remove(id container.ContainerID)
	// Updates carries the changed verdicts.
	Updates() <-chan Update
}

type manager struct {
	mu      sync.RWMutex
	cache   map[container.ContainerID]Result
	updates chan Update
}

// NewManager returns an empty Manager. Its Updates channel has room for 20 updates, as the
// kubelet's: a worker blocks on a full channel rather than lose a verdict.
func NewManager() Manager {
	return &manager{cache: map[container.ContainerID]Result{}, updates: make(chan Update, 20)}
}

func (m *manager) Get(id container.ContainerID) (Result, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.cache[id]
	return r, ok
}

func (m *manager) Set(id container.ContainerID, result Result, pod *v1.Pod) {
	if m.setInternal(id, result) {
		m.updates <- Update{ContainerID: id, Result: result, PodUID: pod.UID}
	}
}

// setInternal stores result and reports whether it changed.
func (m *manager) setInternal(id container.ContainerID, result Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, exists := m.cache[id]
	if exists && prev == result {
		return false
	}
	m.cache[id] = result
	return true
}

func (m *manager) Remove(id container.ContainerID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cache, id)
}

func (m *manager) Updates() <-chan Update { return m.updates }
