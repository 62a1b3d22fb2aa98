// Package status is the node agent's status manager: the source of truth for the status of
// every pod on the node, and the one writer of pods/status. syncPod (seed 003, "同步 podStatus
// 到 kubelet.statusManager") hands it each status it generates; a goroutine of its own writes
// them to the API server with as few requests as it can, and finishes the deletion of pods
// that are gone from the node.
package status

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/podstatus"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// syncPeriod is how often every status is compared with the API's.
const syncPeriod = 10 * time.Second

// Manager keeps the latest status of each pod and writes it to the API server.
type Manager interface {
	// Start starts the goroutine that writes statuses; it returns at once and the goroutine
	// ends with ctx.
	Start(ctx context.Context)
	// Run writes statuses in the calling goroutine until ctx ends (what Start runs, for a
	// caller that waits for its goroutines); it runs once, however often it is called.
	Run(ctx context.Context)
	// GetPodStatus returns the latest status of a pod (a static pod's UID or its mirror's).
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
	// SetPodStatus stores a new status for pod and queues its write.
	SetPodStatus(logger klog.Logger, pod *v1.Pod, status v1.PodStatus)
	// SetContainerReadiness and SetContainerStartup record a probe's verdict on a container
	// and update the Ready and ContainersReady conditions.
	SetContainerReadiness(logger klog.Logger, podUID types.UID, containerID container.ContainerID, ready bool)
	SetContainerStartup(logger klog.Logger, podUID types.UID, containerID container.ContainerID, started bool)
	// TerminatePod marks every container that has not terminated as terminated, the pod as
	// Failed unless it is terminal already, and queues the write.
	TerminatePod(logger klog.Logger, pod *v1.Pod)
	// RemoveOrphanedStatuses forgets the statuses of pods not in podUIDs.
	RemoveOrphanedStatuses(logger klog.Logger, podUIDs map[types.UID]bool)
}

// PodManager is what the status manager needs of the node agent's pods.
type PodManager interface {
	GetPodByUID(types.UID) (*v1.Pod, bool)
	GetMirrorPodByPod(*v1.Pod) (*v1.Pod, bool)
	// TranslatePodUID maps a mirror pod's UID to its static pod's; other UIDs map to themselves.
	TranslatePodUID(types.UID) types.UID
}

// PodDeletionSafetyProvider says whether a pod's containers could still be running.
type PodDeletionSafetyProvider interface {
	PodCouldHaveRunningContainers(*v1.Pod) bool
}

// Option adjusts a Manager.
type Option func(*manager)

// WithClock sets the clock of the periodic sync and of the times the manager stamps.
func WithClock(c clock.WithTicker) Option { return func(m *manager) { m.clock = c } }

// WithSyncPeriod sets how often every status is compared with the API's (10 s).
func WithSyncPeriod(d time.Duration) Option { return func(m *manager) { m.syncPeriod = d } }

// versionedStatus is a stored status with its version: each change of the pod's status
// gets the next version, and the writer remembers the last version it wrote.
type versionedStatus struct {
	version      uint64
	podName      string
	podNamespace string
	status       v1.PodStatus
}

// manager is the Manager.
//
// A pod's status lives here from the pod's first SetPodStatus until RemoveOrphanedStatuses
// drops it or the pod is deleted from the API:
//
//	SetPodStatus / SetContainerReadiness / SetContainerStartup / TerminatePod
//	   │  normalize, keep transition and start times, refuse illegal transitions;
//	   │  unchanged status → nothing; else version+1
//	   ▼
//	podStatuses[uid] ──(signal, coalesced)──► syncBatch(changed): every status whose version
//	   │                                         is newer than the one last written
//	   │ every 10 s ──────────────────────────► syncBatch(all): also statuses the API lost
//	   │                                         (drift) and pods waiting for deletion
//	   ▼
//	syncPod: GET pod ─► merge with the API's status ─► PATCH pods/status if the patch changes
//	   anything ─► remember the version ─► DELETE (grace 0, UID precondition) when the pod is
//	   being deleted, terminal in the API, and none of its containers can run ─► forget it.
//
// A static pod's status is written to its mirror pod, and not at all while it has none.
// podStatuses is guarded by mu; apiStatusVersions belongs to the sync goroutine.
type manager struct {
	client     kubernetes.Interface
	podManager PodManager
	safety     PodDeletionSafetyProvider
	clock      clock.WithTicker
	syncPeriod time.Duration

	mu          sync.RWMutex
	podStatuses map[types.UID]versionedStatus
	changed     chan struct{}
	startOnce   sync.Once

	// apiStatusVersions is the last version written, by the UID of the API's pod (the
	// mirror pod's for a static pod).
	apiStatusVersions map[types.UID]uint64
	// inSync remembers, by the API pod's UID, the pair last found not to have drifted: the
	// API pod's resourceVersion and our status version. While neither changes the answer
	// cannot, so the 10-second check of every pod costs a map lookup instead of a compare.
	inSync map[types.UID]syncedPair
}

// syncedPair is an API pod's resourceVersion and the status version compared with it.
type syncedPair struct {
	resourceVersion string
	version         uint64
}

// NewManager returns a Manager writing through kubeClient (nil: it keeps statuses and
// writes nothing).
func NewManager(kubeClient kubernetes.Interface, podManager PodManager, safety PodDeletionSafetyProvider, opts ...Option) Manager {
	m := &manager{
		client:            kubeClient,
		podManager:        podManager,
		safety:            safety,
		clock:             clock.RealClock{},
		syncPeriod:        syncPeriod,
		podStatuses:       map[types.UID]versionedStatus{},
		changed:           make(chan struct{}, 1),
		apiStatusVersions: map[types.UID]uint64{},
		inSync:            map[types.UID]syncedPair{},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

func (m *manager) Start(ctx context.Context) { go m.Run(ctx) }

func (m *manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if m.client == nil {
		logger.Info("Kubernetes client is nil, not starting status manager")
		return
	}
	m.startOnce.Do(func() {
		logger.Info("Starting to sync pod status with apiserver")
		panics.Forever(ctx, Component, m.run)
	})
}

// run is the sync goroutine: a batch of the changed statuses on each signal, a batch of all
// every syncPeriod.
func (m *manager) run(ctx context.Context) {
	ticker := m.clock.NewTicker(m.syncPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.changed:
			m.syncBatch(ctx, false)
		case <-ticker.C():
			m.syncBatch(ctx, true)
		}
	}
}

func (m *manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.podStatuses[m.podManager.TranslatePodUID(uid)]
	return s.status, ok
}

func (m *manager) SetPodStatus(logger klog.Logger, pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	status = *status.DeepCopy()
	status.ObservedGeneration = pod.Generation
	m.updateStatusInternal(logger, pod, status, pod.DeletionTimestamp != nil)
}

// findContainerStatus finds the app or init container with that ID.
func findContainerStatus(s *v1.PodStatus, id string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses} {
		for i := range list {
			if list[i].ContainerID == id {
				return &list[i]
			}
		}
	}
	return nil
}

// updateContainer applies change to one container's stored status; it reports nothing to do
// when the pod, its status or the container is unknown, or change changes nothing.
func (m *manager) updateContainer(logger klog.Logger, podUID types.UID, id container.ContainerID, what string, change func(*v1.ContainerStatus) bool, conditions bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pod, ok := m.podManager.GetPodByUID(podUID)
	if !ok {
		logger.V(4).Info("Pod has been deleted, no need to update "+what, "podUID", podUID)
		return
	}
	cached, ok := m.podStatuses[pod.UID]
	if !ok {
		logger.Info("Container "+what+" changed before pod has synced", "pod", klog.KObj(pod), "containerID", id.String())
		return
	}
	status := *cached.status.DeepCopy()
	cs := findContainerStatus(&status, id.String())
	if cs == nil {
		logger.Info("Container "+what+" changed for unknown container", "pod", klog.KObj(pod), "containerID", id.String())
		return
	}
	if !change(cs) {
		logger.V(4).Info("Container "+what+" unchanged", "pod", klog.KObj(pod), "containerID", id.String())
		return
	}
	if conditions {
		all := append(append([]v1.ContainerStatus(nil), status.InitContainerStatuses...), status.ContainerStatuses...)
		for _, c := range []v1.PodCondition{
			podstatus.GeneratePodReadyCondition(pod, status.Conditions, all, status.Phase),
			podstatus.GenerateContainersReadyCondition(pod, all, status.Phase),
		} {
			if old := findCondition(status.Conditions, c.Type); old != nil {
				*old = c
			} else {
				status.Conditions = append(status.Conditions, c)
			}
		}
	}
	m.updateStatusInternal(logger, pod, status, false)
}

func (m *manager) SetContainerReadiness(logger klog.Logger, podUID types.UID, containerID container.ContainerID, ready bool) {
	m.updateContainer(logger, podUID, containerID, "readiness", func(cs *v1.ContainerStatus) bool {
		if cs.Ready == ready {
			return false
		}
		cs.Ready = ready
		return true
	}, true)
}

func (m *manager) SetContainerStartup(logger klog.Logger, podUID types.UID, containerID container.ContainerID, started bool) {
	m.updateContainer(logger, podUID, containerID, "startup", func(cs *v1.ContainerStatus) bool {
		if cs.Started != nil && *cs.Started == started {
			return false
		}
		cs.Started = &started
		return true
	}, false)
}

func (m *manager) TerminatePod(logger klog.Logger, pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := pod.Status
	if cached, ok := m.podStatuses[pod.UID]; ok {
		old = cached.status
	}
	logger.V(3).Info("Marking pod terminated", "pod", klog.KObj(pod), "podUID", pod.UID, "oldPhase", old.Phase)
	m.updateStatusInternal(logger, pod, terminatedStatus(pod, old), true)
}

func (m *manager) RemoveOrphanedStatuses(logger klog.Logger, podUIDs map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.podStatuses {
		if !podUIDs[uid] {
			logger.V(5).Info("Removing pod from status map", "podUID", uid)
			delete(m.podStatuses, uid)
		}
	}
}

// updateStatusInternal stores status as the pod's newest and signals the writer. The caller
// holds mu. It keeps the times that must not move (condition transitions whose status did not
// change, the start time), refuses a container's illegal return from termination, keeps a
// terminal phase terminal, and ignores a status equal to the stored one unless forced.
func (m *manager) updateStatusInternal(logger klog.Logger, pod *v1.Pod, status v1.PodStatus, force bool) bool {
	cached, isCached := m.podStatuses[pod.UID]
	var old v1.PodStatus
	switch mirror, hasMirror := m.podManager.GetMirrorPodByPod(pod); {
	case isCached:
		old = cached.status
	case hasMirror:
		old = mirror.Status
	default:
		old = pod.Status
	}
	if err := checkContainerStateTransition(&old, &status, &pod.Spec); err != nil {
		logger.Error(err, "Status update on pod aborted", "pod", klog.KObj(pod))
		return false
	}
	if isTerminal(old.Phase) && status.Phase != old.Phase {
		logger.Error(nil, "Pod attempted illegal phase transition, keeping its terminal phase", "pod", klog.KObj(pod), "phase", old.Phase, "attemptedPhase", status.Phase)
		status.Phase, status.Reason, status.Message = old.Phase, old.Reason, old.Message
	}
	now := metav1.NewTime(m.clock.Now())
	podstatus.UpdateLastTransitionTimes(&status, &old, now)
	if old.StartTime != nil && !old.StartTime.IsZero() {
		status.StartTime = old.StartTime.DeepCopy()
	} else if status.StartTime == nil || status.StartTime.IsZero() {
		status.StartTime = &now
	}
	if old.ObservedGeneration > status.ObservedGeneration {
		status.ObservedGeneration = old.ObservedGeneration
	}
	normalizeStatus(pod, &status)

	if isCached && !force && statusEqual(&cached.status, &status) {
		logger.V(3).Info("Ignoring same status for pod", "pod", klog.KObj(pod))
		return false
	}
	m.podStatuses[pod.UID] = versionedStatus{
		version:      cached.version + 1,
		podName:      pod.Name,
		podNamespace: pod.Namespace,
		status:       status,
	}
	select {
	case m.changed <- struct{}{}:
	default:
	}
	return true
}

// deletePodStatus forgets a pod's status.
func (m *manager) deletePodStatus(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.podStatuses, uid)
}

// Component names the status manager in berth_recovered_panics_total.
const Component = "status"
