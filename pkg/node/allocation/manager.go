// Package allocation is the node agent's allocation manager: the resources the node granted
// each pod it admitted (HandlePodAdditions' canAdmitPod, seed 003), and the in-place resizes
// of them (a new spec.containers[*].resources written through pods/resize).
//
// A pod's allocation is its containers' resources as they were admitted. The pod workers sync
// a pod with its allocated resources, not its spec's: a resize the node has not accepted
// changes nothing on the node. HandlePodUpdates hands a changed pod to HandlePodUpdate; a
// resize is accepted when the pod, at its new size, passes the node's admit handlers beside
// the other pods at their allocated sizes:
//
//	spec ≠ allocation ─► admit? ─ yes ─► allocation := spec, PodResizeInProgress, ResizeStarted
//	                          └── no ──► PodResizePending (Deferred, or Infeasible), ResizeDeferred
//	                                     / ResizeInfeasible; retried when pods leave the node
//	                                     and every 3 minutes
//
// PodResizeInProgress stays until the runtime has actuated the allocation (the node agent's
// SyncPod clears it, with a ResizeCompleted event). The allocations are kept in a file in the
// node's data dir, so that a restarted node agent admits its pods at the sizes it granted.
package allocation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/qos"
)

// The events of a resize, as the kubelet names them.
const (
	EventResizeStarted    = "ResizeStarted"
	EventResizeDeferred   = "ResizeDeferred"
	EventResizeInfeasible = "ResizeInfeasible"
	EventResizeCompleted  = "ResizeCompleted"
	EventResizeError      = "ResizeError"
)

// How often pending resizes are retried: first after 30 s, then every 3 min, as the kubelet.
const (
	initialRetryDelay = 30 * time.Second
	retryDelay        = 3 * time.Minute
)

// AdmitFunc asks the node's admit handlers whether pod fits beside others (which hold their
// allocated resources).
type AdmitFunc func(pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string)

// Config is what a Manager works with.
type Config struct {
	// Allocated keeps the allocations.
	Allocated *Store
	// Admit runs the node's admit handlers.
	Admit AdmitFunc
	// GetPodByUID returns the node agent's pod, its spec as the API has it.
	GetPodByUID func(types.UID) (*v1.Pod, bool)
	// ActivePods are the admitted pods that still hold resources.
	ActivePods func() []*v1.Pod
	// SourcesReady says every pod source has been seen: until then a pending resize may only
	// look as if it fit.
	SourcesReady func() bool
	Recorder     record.EventRecorder
	Clock        clock.WithTicker
}

// resizeConditions are a pod's resize conditions, nil when absent.
type resizeConditions struct {
	pending, inProgress *v1.PodCondition
}

// Manager is the allocation manager. admitMu serializes admissions (of new pods and of
// resizes), so that two never count the same free resources; mu guards the conditions and
// the pending list, which the pod workers read.
type Manager struct {
	cfg     Config
	admitMu sync.Mutex

	mu         sync.Mutex
	conditions map[types.UID]resizeConditions
	pending    []types.UID
	retry      chan struct{}
}

// NewManager returns a Manager.
func NewManager(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.SourcesReady == nil {
		cfg.SourcesReady = func() bool { return true }
	}
	return &Manager{cfg: cfg, conditions: map[types.UID]resizeConditions{}, retry: make(chan struct{}, 1)}
}

// UpdatePodFromAllocation returns pod with its containers' allocated resources (a copy, when
// they differ from the spec's), and whether they differ.
func (m *Manager) UpdatePodFromAllocation(pod *v1.Pod) (*v1.Pod, bool) {
	if pod == nil {
		return pod, false
	}
	alloc, ok := m.cfg.Allocated.Pod(pod.UID)
	if !ok {
		return pod, false
	}
	return withResources(pod, alloc)
}

// withResources is pod with the containers' resources of rs where they differ.
func withResources(pod *v1.Pod, rs ContainerResources) (*v1.Pod, bool) {
	out := pod
	for _, list := range []func(*v1.Pod) []v1.Container{
		func(p *v1.Pod) []v1.Container { return p.Spec.InitContainers },
		func(p *v1.Pod) []v1.Container { return p.Spec.Containers },
	} {
		for i, c := range list(pod) {
			r, ok := rs[c.Name]
			if !ok || apiequality.Semantic.DeepEqual(c.Resources, r) {
				continue
			}
			if out == pod {
				out = pod.DeepCopy()
			}
			list(out)[i].Resources = *r.DeepCopy()
		}
	}
	return out, out != pod
}

// ResourcesOf are the resources of every container of pod, init containers included: all
// of them can be resized.
func ResourcesOf(pod *v1.Pod) ContainerResources {
	out := ContainerResources{}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			out[c.Name] = *c.Resources.DeepCopy()
		}
	}
	return out
}

// HasAllocation reports whether the pod was admitted here and its allocation recorded.
func (m *Manager) HasAllocation(uid types.UID) bool {
	_, ok := m.cfg.Allocated.Pod(uid)
	return ok
}

// AllocatedPods are the pods of active that were admitted, with their allocated resources.
func (m *Manager) AllocatedPods(active []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(active))
	for _, p := range active {
		if alloc, ok := m.cfg.Allocated.Pod(p.UID); ok {
			ap, _ := withResources(p, alloc)
			out = append(out, ap)
		}
	}
	return out
}

// AddPod admits a new pod beside the active ones, at the resources it was allocated before
// (a node agent restart) or else at its spec's, and records the allocation. A pod whose spec
// asks for other resources than it was allocated has a pending resize: the caller retries the
// pending resizes once every pod is added (RetryPendingResizes).
func (m *Manager) AddPod(logger klog.Logger, pod *v1.Pod, active []*v1.Pod) (ok bool, reason, message string) {
	m.admitMu.Lock()
	defer m.admitMu.Unlock()
	allocated, resized := m.UpdatePodFromAllocation(pod)
	ok, reason, message = m.cfg.Admit(allocated, m.othersAllocated(active, pod.UID))
	if !ok {
		return false, reason, message
	}
	if err := m.cfg.Allocated.SetPod(pod.UID, ResourcesOf(allocated)); err != nil {
		logger.Error(err, "SetPodAllocation failed", "pod", klog.KObj(pod))
	}
	m.backfillConditions(pod)
	if resized {
		m.PushPendingResize(pod.UID)
	}
	return true, "", ""
}

// othersAllocated are the allocated active pods but uid.
func (m *Manager) othersAllocated(active []*v1.Pod, uid types.UID) []*v1.Pod {
	return slices.DeleteFunc(m.AllocatedPods(active), func(p *v1.Pod) bool { return p.UID == uid })
}

// HandlePodUpdate looks at an updated pod for a resize: resources that differ from the
// allocation are retried at once (and wait as pending if they do not fit); a spec back at its
// allocation ends the pending resize.
func (m *Manager) HandlePodUpdate(ctx context.Context, pod *v1.Pod) {
	if !m.HasAllocation(pod.UID) {
		return // not admitted (yet), or rejected
	}
	if _, resized := m.UpdatePodFromAllocation(pod); !resized {
		m.clearPending(pod.UID)
		return
	}
	m.PushPendingResize(pod.UID)
	m.RetryPendingResizes(ctx)
}

// PushPendingResize queues a pod's resize for RetryPendingResizes.
func (m *Manager) PushPendingResize(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.pending, uid) {
		m.pending = append(m.pending, uid)
	}
}

// TriggerRetry asks Run to retry the pending resizes now (a pod left the node, or finished).
func (m *Manager) TriggerRetry() {
	m.mu.Lock()
	n := len(m.pending)
	m.mu.Unlock()
	if n == 0 {
		return
	}
	select {
	case m.retry <- struct{}{}:
	default:
	}
}

// RetryPendingResizes tries each pending resize, in the kubelet's order (those that do not
// grow requests first, then by priority, Guaranteed before Burstable, the longest pending
// first). A deferred one stays pending; it returns the pods whose resize was accepted or whose
// resize conditions changed, which must be synced.
func (m *Manager) RetryPendingResizes(ctx context.Context) []*v1.Pod {
	logger := klog.FromContext(ctx)
	m.admitMu.Lock()
	defer m.admitMu.Unlock()
	if !m.cfg.SourcesReady() {
		logger.V(4).Info("Skipping evaluation of pending resizes; sources are not ready")
		return nil
	}
	m.mu.Lock()
	uids := slices.Clone(m.pending)
	m.mu.Unlock()

	var pods []*v1.Pod
	for _, uid := range uids {
		if pod, ok := m.cfg.GetPodByUID(uid); ok {
			pods = append(pods, pod)
		} else {
			logger.V(4).Info("Pod not found; removing from pending resizes", "podUID", uid)
		}
	}
	m.sortPending(pods)

	var stillPending []types.UID
	var toSync []*v1.Pod
	for _, pod := range pods {
		before := m.ResizeConditions(pod.UID)
		allocated, err := m.handleResize(ctx, pod)
		switch {
		case err != nil:
			logger.Error(err, "Failed to handle pod resources resize", "pod", klog.KObj(pod))
			stillPending = append(stillPending, pod.UID)
		case m.isPending(pod.UID, v1.PodReasonDeferred):
			logger.V(4).Info("Pod resize is deferred; will reevaluate later", "pod", klog.KObj(pod))
			stillPending = append(stillPending, pod.UID)
		case m.isPending(pod.UID, v1.PodReasonInfeasible):
			logger.V(4).Info("Pod resize is infeasible", "pod", klog.KObj(pod))
		default:
			logger.V(4).Info("Pod resize successfully allocated", "pod", klog.KObj(pod))
		}
		if allocated || !apiequality.Semantic.DeepEqual(before, m.ResizeConditions(pod.UID)) {
			toSync = append(toSync, pod)
		}
	}
	m.mu.Lock()
	// Keep what was pushed meanwhile.
	for _, uid := range m.pending {
		if !slices.Contains(uids, uid) {
			stillPending = append(stillPending, uid)
		}
	}
	m.pending = stillPending
	m.mu.Unlock()
	return toSync
}

// handleResize tries to allocate the pod's spec: accepted, it is recorded and the pod is
// PodResizeInProgress; refused, the pod is PodResizePending.
func (m *Manager) handleResize(ctx context.Context, pod *v1.Pod) (bool, error) {
	logger := klog.FromContext(ctx)
	if _, resized := m.UpdatePodFromAllocation(pod); !resized {
		m.clearPending(pod.UID)
		return false, nil
	}
	ok, reason, message := m.cfg.Admit(pod, m.othersAllocated(m.cfg.ActivePods(), pod.UID))
	if ok {
		if err := m.cfg.Allocated.SetPod(pod.UID, ResourcesOf(pod)); err != nil {
			return false, err
		}
		m.clearPending(pod.UID)
		// A new resize starts a new in-progress condition, at the new generation.
		m.ClearResizeInProgress(pod.UID)
		m.SetResizeInProgress(pod.UID, "", "", pod.Generation)
		m.event(logger, pod, v1.EventTypeNormal, EventResizeStarted, resizeMessage(logger, pod, pod.Generation, "", "Pod resize started"))
		return true, nil
	}
	if reason != "" && m.setPending(pod.UID, reason, message, pod.Generation) {
		reason = pendingReason(reason)
		event := EventResizeDeferred
		if reason == v1.PodReasonInfeasible {
			event = EventResizeInfeasible
		}
		m.event(logger, pod, v1.EventTypeWarning, event, resizeMessage(logger, pod, pod.Generation, message, "Pod resize "+reason))
	}
	return false, nil
}

func (m *Manager) event(logger klog.Logger, pod *v1.Pod, eventType, reason, message string) {
	if m.cfg.Recorder != nil {
		m.cfg.Recorder.Event(pod, eventType, reason, message)
	}
	logger.V(3).Info("Pod resize", "pod", klog.KObj(pod), "reason", reason, "message", message)
}

// sortPending orders pending resizes as the kubelet retries them.
func (m *Manager) sortPending(pods []*v1.Pod) {
	priority := func(p *v1.Pod) int32 {
		if p.Spec.Priority != nil {
			return *p.Spec.Priority
		}
		return 0
	}
	since := func(p *v1.Pod) *metav1.Time {
		m.mu.Lock()
		defer m.mu.Unlock()
		if c := m.conditions[p.UID].pending; c != nil {
			t := c.LastTransitionTime
			return &t
		}
		return nil
	}
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
		if ga, gb := m.growsRequests(a), m.growsRequests(b); ga != gb {
			if !ga {
				return -1
			}
			return 1
		}
		if pa, pb := priority(a), priority(b); pa != pb {
			if pa > pb {
				return -1
			}
			return 1
		}
		if qa, qb := qos.PodQOSClass(a) == v1.PodQOSGuaranteed, qos.PodQOSClass(b) == v1.PodQOSGuaranteed; qa != qb {
			if qa {
				return -1
			}
			return 1
		}
		ta, tb := since(a), since(b)
		switch {
		case ta == nil && tb == nil:
			return 0
		case ta == nil:
			return 1
		case tb == nil:
			return -1
		case ta.Before(tb):
			return -1
		case tb.Before(ta):
			return 1
		}
		return 0
	})
}

// growsRequests reports a resize that asks for more cpu or memory than the pod was allocated.
func (m *Manager) growsRequests(pod *v1.Pod) bool {
	allocated, resized := m.UpdatePodFromAllocation(pod)
	if !resized {
		return false
	}
	before := resourcehelper.PodRequests(allocated, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
	after := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
	return after.Memory().Cmp(*before.Memory()) > 0 || after.Cpu().Cmp(*before.Cpu()) > 0
}

// Run retries the pending resizes every 3 minutes (the first time after 30 s), and when
// TriggerRetry asks, until ctx ends; sync syncs a pod whose resize moved.
func (m *Manager) Run(ctx context.Context, sync func(*v1.Pod)) {
	t := m.cfg.Clock.NewTicker(initialRetryDelay)
	defer func() { t.Stop() }()
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if first {
				// The kubelet's ticker goes to its long period after the first retry.
				t.Stop()
				t = m.cfg.Clock.NewTicker(retryDelay)
				first = false
			}
		case <-m.retry:
		}
		for _, pod := range m.RetryPendingResizes(ctx) {
			sync(pod)
		}
	}
}

// RemovePod forgets a pod that left the node.
func (m *Manager) RemovePod(logger klog.Logger, uid types.UID) {
	if err := m.cfg.Allocated.RemovePod(uid); err != nil {
		logger.V(3).Info("Failed to delete pod allocation", "podUID", uid, "err", err)
	}
	m.mu.Lock()
	delete(m.conditions, uid)
	m.pending = slices.DeleteFunc(m.pending, func(u types.UID) bool { return u == uid })
	m.mu.Unlock()
}

// RemoveOrphans forgets the pods keep does not want.
func (m *Manager) RemoveOrphans(logger klog.Logger, keep func(types.UID) bool) {
	if err := m.cfg.Allocated.RemoveOrphans(keep); err != nil {
		logger.Error(err, "Failed to remove orphaned pod allocations")
	}
	m.mu.Lock()
	for uid := range m.conditions {
		if !keep(uid) {
			delete(m.conditions, uid)
		}
	}
	m.mu.Unlock()
}

// resizeMessage is the message of a resize event: a prefix, then the pod's resources as JSON
// with the generation (and the error, if any), as the kubelet writes it.
func resizeMessage(logger klog.Logger, pod *v1.Pod, generation int64, errorMessage, prefix string) string {
	type containerAllocation struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []containerAllocation `json:"initContainers,omitempty"`
		Containers     []containerAllocation `json:"containers,omitempty"`
		Generation     int64                 `json:"generation"`
		Error          string                `json:"error,omitempty"`
	}{Generation: generation, Error: errorMessage}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	data, err := json.Marshal(summary)
	if err != nil {
		logger.Error(err, "Failed to serialize resource summary", "pod", klog.KObj(pod))
		return prefix
	}
	return fmt.Sprintf("%s: %s", prefix, data)
}

// ResizeCompletedMessage and ResizeErrorMessage are the messages of the ResizeCompleted and
// ResizeError events.
func ResizeCompletedMessage(logger klog.Logger, pod *v1.Pod, generation int64) string {
	return resizeMessage(logger, pod, generation, "", "Pod resize completed")
}

func ResizeErrorMessage(logger klog.Logger, pod *v1.Pod, generation int64, errorMessage string) string {
	return resizeMessage(logger, pod, generation, errorMessage, "Pod resize error")
}

// ResizeInProgress reports a running container of the (allocated) pod whose actuated
// resources differ from its allocation in cpu or memory.
func ResizeInProgress(pod *v1.Pod, running func(name string) bool, actuated func(name string) (v1.ResourceRequirements, bool)) bool {
	differ := func(a, b v1.ResourceRequirements) bool {
		for _, pair := range [][2]v1.ResourceList{{a.Requests, b.Requests}, {a.Limits, b.Limits}} {
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				x, y := pair[0][name], pair[1][name]
				if !x.Equal(y) {
					return true
				}
			}
		}
		return false
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if !running(c.Name) {
				continue
			}
			if r, _ := actuated(c.Name); differ(c.Resources, r) {
				return true
			}
		}
	}
	return false
}
