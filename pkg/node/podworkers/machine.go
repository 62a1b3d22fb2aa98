package podworkers

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// NetworkNotReadyErrorMsg in a sync error makes the worker retry after 1 s instead of the
// back-off period: the network usually comes up soon.
const NetworkNotReadyErrorMsg = "network is not ready"

const (
	// Jitter factors of the requeue delays (as upstream: a delay d becomes d..1.5d).
	resyncJitterFactor  = 0.5
	backOffJitterFactor = 0.5
	// backOffOnTransientError is the retry delay after a network-not-ready error.
	backOffOnTransientError = time.Second
)

// machine owns the lifecycle of every pod the workers know. It does no I/O and starts no
// goroutine: each method changes the state and returns the actions the driver must take. The
// driver calls it under one lock.
//
// A pod's life on this node:
//
//	                   UpdatePod (first time)
//	                            │
//	                            ▼
//	waiting ── its full name is free (no started, unfinished pod holds it) ──► syncing
//	   │                                                          SyncPod on every update,
//	   │ kill before start                                        resync (1 min), retry (10 s)
//	   │ (never syncs)                                                            │
//	   │            kill: SyncPodKill, deletionTimestamp, terminal phase,         │
//	   │            isTerminal from SyncPod, orphaned in SyncKnownPods;           │
//	   ▼            cancels a running SyncPod                                     │
//	terminating ◄─────────────────────────────────────────────────────────────────┘
//	   │  SyncTerminatingPod(gracePeriod) until it succeeds; a later kill may only
//	   │  shorten the grace period (and then cancels the running call)
//	   ▼  success: the kills' CompletedCh are closed
//	terminated
//	   │  SyncTerminatedPod until it succeeds
//	   ▼  success: the full name is released; the first pod waiting for it is woken
//	finished
//	   │  the worker exits; further updates are ignored
//	   ▼  SyncKnownPods: no longer desired (or re-created with the same UID)
//	forgotten
//
//	runtime-only pod (the RunningPod of an orphan):
//	terminating (SyncTerminatingRuntimePod until it succeeds) ──► forgotten
//
// Every sync first waits for a cache status newer than the previous sync ended.
type machine struct {
	clock          clock.PassiveClock
	resyncInterval time.Duration
	backOffPeriod  time.Duration

	pods map[types.UID]*podState
	// startedByFullName is the pod that holds each full name: started, not yet finished.
	startedByFullName map[string]types.UID
	// waitingByFullName are the pods waiting for a full name, in arrival order.
	waitingByFullName map[string][]types.UID
	// synced is set by the first SyncKnownPods: from then on, an unknown pod is known not to run.
	synced bool
}

// podState is one pod's record.
type podState struct {
	fullName string
	// pending is the latest update not yet taken by the worker (updates coalesce here).
	pending *UpdatePodOptions
	// active is the last update the worker took, merged (the last known pod and mirror pod).
	active *UpdatePodOptions
	// hasWorker: a worker goroutine exists for the pod.
	hasWorker bool
	// lastSync is when the last sync ended; the next one waits for a fresher cache status.
	lastSync time.Time

	syncedAt, startedAt, terminatingAt, terminatedAt time.Time
	// gracePeriod is the kill's grace period in seconds once terminating (≥ 1).
	gracePeriod int64
	// startedTerminating: the worker has seen the kill, so no container will start again.
	startedTerminating bool
	deleted            bool
	evicted            bool
	finished           bool
	// restartRequested: a create came for the same UID while terminating; once finished the
	// pod is forgotten so that the create can be sent again.
	restartRequested bool
	// observedRuntime: the pod was seen in the runtime (a RunningPod kill) and must be stopped.
	observedRuntime bool

	notifyPostTerminating []chan<- struct{}
	statusPostTerminating []func(*v1.PodStatus)
}

func (s *podState) started() bool              { return !s.startedAt.IsZero() }
func (s *podState) terminationRequested() bool { return !s.terminatingAt.IsZero() }
func (s *podState) terminated() bool           { return !s.terminatedAt.IsZero() }

func (s *podState) workType() PodWorkerState {
	switch {
	case s.terminated():
		return TerminatedPod
	case s.terminationRequested():
		return TerminatingPod
	}
	return SyncPod
}

// lastPod is the pod as last seen: the worker's active update, else the pending one.
func (s *podState) lastPod() *v1.Pod {
	if s.active != nil && s.active.Pod != nil {
		return s.active.Pod
	}
	if s.pending != nil {
		return s.pending.Pod
	}
	return nil
}

type actionKind int

const (
	// actStartWorker: start the pod's worker goroutine.
	actStartWorker actionKind = iota
	// actWake: the pod has pending work.
	actWake
	// actCancel: cancel the pod's running sync (its context).
	actCancel
	// actStopWorker: the pod is forgotten; its worker must exit.
	actStopWorker
	// actClose: close ch (a kill's CompletedCh).
	actClose
	// actEnqueue: put the pod in the work queue after delay (jittered by jitter).
	actEnqueue
)

type action struct {
	kind   actionKind
	uid    types.UID
	ch     chan<- struct{}
	delay  time.Duration
	jitter float64
}

// podWork is one sync the worker must carry out.
type podWork struct {
	State   PodWorkerState
	Options UpdatePodOptions
	// GracePeriod is set for TerminatingPod.
	GracePeriod *int64
	// StatusFn is the last kill's PodStatusFunc, for TerminatingPod.
	StatusFn func(*v1.PodStatus)
	// NewerThan: the sync needs a cache status newer than this (unless a RunningPod).
	NewerThan time.Time
}

// workResult is how a podWork went.
type workResult struct {
	// ran: the syncer was called (the status was read).
	ran        bool
	isTerminal bool
	err        error
}

type workStep int

const (
	stepRun  workStep = iota // carry out the returned work
	stepIdle                 // nothing to do until woken
	stepExit                 // the worker must exit
)

func newMachine(clk clock.PassiveClock, resyncInterval, backOffPeriod time.Duration) *machine {
	return &machine{
		clock:             clk,
		resyncInterval:    resyncInterval,
		backOffPeriod:     backOffPeriod,
		pods:              map[types.UID]*podState{},
		startedByFullName: map[string]types.UID{},
		waitingByFullName: map[string][]types.UID{},
	}
}

func isTerminalPhase(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded
}

// runtimePodAsAPIPod is the placeholder API pod of a runtime-only pod.
func runtimePodAsAPIPod(p *container.Pod) *v1.Pod {
	pod := &v1.Pod{}
	pod.UID, pod.Name, pod.Namespace = p.ID, p.Name, p.Namespace
	return pod
}

// update takes one UpdatePod. runtimeTerminal says whether the cache shows nothing of the pod
// running (the driver reads it for a pod in a terminal phase).
func (m *machine) update(logger klog.Logger, opts UpdatePodOptions, runtimeTerminal bool) []action {
	var uid types.UID
	var name, namespace string
	isRuntimePod := false
	switch {
	case opts.Pod != nil:
		if opts.RunningPod != nil {
			logger.Info("Pod update included RunningPod which is only valid when Pod is not specified", "pod", klog.KObj(opts.Pod))
			opts.RunningPod = nil
		}
		uid, name, namespace = opts.Pod.UID, opts.Pod.Name, opts.Pod.Namespace
	case opts.RunningPod != nil:
		if opts.UpdateType != nodetypes.SyncPodKill {
			logger.Info("Pod update is ignored, runtime pods can only be killed", "pod", klog.KRef(opts.RunningPod.Namespace, opts.RunningPod.Name), "podUID", opts.RunningPod.ID, "updateType", opts.UpdateType)
			return nil
		}
		uid, name, namespace = opts.RunningPod.ID, opts.RunningPod.Name, opts.RunningPod.Namespace
		isRuntimePod = true
	default:
		logger.Error(nil, "Pod update without a pod is ignored", "updateType", opts.UpdateType)
		return nil
	}
	logger = logger.WithValues("pod", klog.KRef(namespace, name), "podUID", uid, "updateType", opts.UpdateType)

	now := m.clock.Now()
	st, known := m.pods[uid]
	if !known {
		logger.V(4).Info("Pod is being synced for the first time")
		st = &podState{syncedAt: now, fullName: name + "_" + namespace}
		if opts.Pod != nil && isTerminalPhase(opts.Pod) && runtimeTerminal {
			// A pod that finished before the node agent restarted: only its clean-up is left.
			st.terminatingAt, st.terminatedAt, st.startedTerminating = now, now, true
		}
		m.pods[uid] = st
	}

	pod := opts.Pod
	if isRuntimePod {
		st.observedRuntime = true
		switch {
		case st.pending != nil && st.pending.Pod != nil:
			pod = st.pending.Pod
		case st.active != nil && st.active.Pod != nil:
			pod = st.active.Pod
		}
		if pod != nil {
			// The spec is known: terminate the pod as itself.
			opts.Pod, opts.RunningPod = pod, nil
		} else {
			pod = runtimePodAsAPIPod(opts.RunningPod)
		}
	}

	if known && st.terminationRequested() && opts.UpdateType == nodetypes.SyncPodCreate {
		st.restartRequested = true
		logger.V(4).Info("Pod is terminating but has been requested to restart with same UID, will be reconciled later")
		return nil
	}
	if st.finished {
		logger.V(4).Info("Pod is finished processing, no further updates")
		return nil
	}

	var acts []action
	becameTerminating := false
	if !st.terminationRequested() {
		switch {
		case isRuntimePod:
			logger.V(4).Info("Pod is orphaned and must be torn down")
			st.deleted, becameTerminating = true, true
		case pod.DeletionTimestamp != nil:
			logger.V(4).Info("Pod is marked for graceful deletion, begin teardown")
			st.deleted, becameTerminating = true, true
		case isTerminalPhase(pod):
			logger.V(4).Info("Pod is in a terminal phase (success/failed), begin teardown")
			becameTerminating = true
		case opts.UpdateType == nodetypes.SyncPodKill:
			if opts.KillPodOptions != nil && opts.KillPodOptions.Evict {
				logger.V(4).Info("Pod is being evicted by the kubelet, begin teardown")
				st.evicted = true
			} else {
				logger.V(4).Info("Pod is being removed by the kubelet, begin teardown")
			}
			becameTerminating = true
		}
		if becameTerminating {
			st.terminatingAt = now
		}
	}

	shortened := false
	switch {
	case st.terminated():
		if isRuntimePod {
			logger.V(3).Info("Pod is waiting for termination, ignoring runtime-only kill until after pod worker is fully terminated")
			return nil
		}
		if opts.KillPodOptions != nil && opts.KillPodOptions.CompletedCh != nil {
			acts = append(acts, action{kind: actClose, uid: uid, ch: opts.KillPodOptions.CompletedCh})
		}
		opts.KillPodOptions = nil
	case st.terminationRequested():
		kill := KillPodOptions{}
		if opts.KillPodOptions != nil {
			kill = *opts.KillPodOptions
		}
		if kill.CompletedCh != nil {
			st.notifyPostTerminating = append(st.notifyPostTerminating, kill.CompletedCh)
		}
		if kill.PodStatusFunc != nil {
			st.statusPostTerminating = append(st.statusPostTerminating, kill.PodStatusFunc)
		}
		gracePeriod, wasShortened := effectiveGracePeriod(st.gracePeriod, pod, kill.PodTerminationGracePeriodSecondsOverride)
		st.gracePeriod, shortened = gracePeriod, wasShortened
		kill.PodTerminationGracePeriodSecondsOverride = &gracePeriod
		opts.KillPodOptions = &kill
	default:
		if opts.KillPodOptions != nil && opts.KillPodOptions.CompletedCh != nil {
			acts = append(acts, action{kind: actClose, uid: uid, ch: opts.KillPodOptions.CompletedCh})
		}
		opts.KillPodOptions = nil
	}

	if !st.hasWorker {
		st.hasWorker = true
		acts = append(acts, action{kind: actStartWorker, uid: uid})
		if opts.RunningPod == nil {
			m.waitingByFullName[st.fullName] = append(m.waitingByFullName[st.fullName], uid)
		}
	}
	// Coalesce: the latest update wins, but keeps the oldest start time.
	if st.pending != nil && !st.pending.StartTime.IsZero() && st.pending.StartTime.Before(opts.StartTime) {
		opts.StartTime = st.pending.StartTime
	}
	st.pending = &opts
	acts = append(acts, action{kind: actWake, uid: uid})
	if becameTerminating || shortened {
		logger.V(3).Info("Cancelling current pod sync", "workType", st.workType())
		acts = append(acts, action{kind: actCancel, uid: uid})
	}
	return acts
}

// effectiveGracePeriod is the grace period of a kill, in seconds: the shortest of the current
// one (0: none yet), the pod's deletion grace period and the kill's override; else the spec's
// terminationGracePeriodSeconds; never below 1. shortened reports a change of a set period.
func effectiveGracePeriod(current int64, pod *v1.Pod, override *int64) (gracePeriod int64, shortened bool) {
	gracePeriod = current
	overridden := false
	for _, p := range []*int64{pod.DeletionGracePeriodSeconds, override} {
		if p != nil && (gracePeriod == 0 || *p < gracePeriod) {
			gracePeriod, overridden = *p, true
		}
	}
	if !overridden && gracePeriod == 0 && pod.Spec.TerminationGracePeriodSeconds != nil {
		gracePeriod = *pod.Spec.TerminationGracePeriodSeconds
	}
	if gracePeriod < 1 {
		gracePeriod = 1
	}
	return gracePeriod, current != 0 && current != gracePeriod
}

// startWork takes the pod's pending update and says what the worker must do with it.
func (m *machine) startWork(uid types.UID) (podWork, workStep, []action) {
	st := m.pods[uid]
	if st == nil || st.finished {
		if st != nil {
			st.hasWorker = false
		}
		return podWork{}, stepExit, nil
	}
	if st.pending == nil {
		return podWork{}, stepIdle, nil
	}
	opts := *st.pending
	if !st.started() {
		// A pod that must stop does not wait for its name: it will run nothing.
		if opts.RunningPod == nil && !st.terminationRequested() && !m.allowStart(st.fullName, uid) {
			return podWork{}, stepIdle, []action{{kind: actEnqueue, uid: uid, delay: m.backOffPeriod, jitter: backOffJitterFactor}}
		}
		st.startedAt = m.clock.Now()
	}
	st.pending = nil
	st.mergeActive(opts)

	work := podWork{State: st.workType(), Options: opts, NewerThan: st.lastSync}
	if work.State == TerminatingPod {
		st.startedTerminating = true
		if st.gracePeriod == 0 {
			st.gracePeriod = m.defaultGracePeriod(st)
		}
		gracePeriod := st.gracePeriod
		work.GracePeriod = &gracePeriod
		if l := len(st.statusPostTerminating); l > 0 {
			work.StatusFn = st.statusPostTerminating[l-1]
		}
	}
	return work, stepRun, nil
}

// mergeActive records the update the worker takes: the newest pod (a RunningPod never replaces
// a known pod), the last mirror pod, the kill's options.
func (s *podState) mergeActive(other UpdatePodOptions) {
	if s.active == nil {
		s.active = &UpdatePodOptions{}
	}
	a := s.active
	a.UpdateType = nodetypes.SyncPodSync
	if a.Pod == nil || other.RunningPod == nil {
		a.Pod = other.Pod
	}
	a.RunningPod = other.RunningPod
	if other.MirrorPod != nil {
		a.MirrorPod = other.MirrorPod
	}
	if k := other.KillPodOptions; k != nil {
		a.KillPodOptions = &KillPodOptions{Evict: k.Evict, PodTerminationGracePeriodSecondsOverride: k.PodTerminationGracePeriodSecondsOverride}
	}
}

func (m *machine) defaultGracePeriod(st *podState) int64 {
	if pod := st.lastPod(); pod != nil {
		gracePeriod, _ := effectiveGracePeriod(0, pod, nil)
		return gracePeriod
	}
	return 1
}

// allowStart lets a pod start when no other pod holds its full name and it is the first live
// pod waiting for it; the pod then holds the name until it is finished.
func (m *machine) allowStart(fullName string, uid types.UID) bool {
	if holder, ok := m.startedByFullName[fullName]; ok {
		return holder == uid
	}
	waiting := m.waitingByFullName[fullName]
	for i, w := range waiting {
		ws := m.pods[w]
		if ws == nil || ws.terminationRequested() {
			continue
		}
		if w != uid {
			m.waitingByFullName[fullName] = waiting[i:]
			return false
		}
		waiting = waiting[i+1:]
		break
	}
	if len(waiting) == 0 {
		delete(m.waitingByFullName, fullName)
	} else {
		m.waitingByFullName[fullName] = waiting
	}
	m.startedByFullName[fullName] = uid
	return true
}

// release frees the pod's full name and wakes the next pod waiting for it.
func (m *machine) release(uid types.UID, st *podState) []action {
	var acts []action
	for _, ch := range st.notifyPostTerminating {
		acts = append(acts, action{kind: actClose, uid: uid, ch: ch})
	}
	st.notifyPostTerminating, st.statusPostTerminating = nil, nil
	if m.startedByFullName[st.fullName] != uid {
		return acts
	}
	delete(m.startedByFullName, st.fullName)
	m.pruneWaiting(st.fullName)
	if waiting := m.waitingByFullName[st.fullName]; len(waiting) > 0 {
		acts = append(acts, action{kind: actWake, uid: waiting[0]})
	}
	return acts
}

// pruneWaiting drops the pods that no longer wait for fullName: forgotten, started, or asked
// to stop before they started.
func (m *machine) pruneWaiting(fullName string) {
	var live []types.UID
	for _, w := range m.waitingByFullName[fullName] {
		if ws := m.pods[w]; ws != nil && !ws.started() && !ws.terminationRequested() {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		delete(m.waitingByFullName, fullName)
		return
	}
	m.waitingByFullName[fullName] = live
}

// requeueLast replays the pod's last update if nothing is pending (a phase transition needs
// the next phase's sync at once).
func (m *machine) requeueLast(uid types.UID, st *podState) []action {
	if st.pending != nil || st.active == nil {
		return nil
	}
	last := *st.active
	st.pending = &last
	return []action{{kind: actWake, uid: uid}}
}

// finishWork records how a podWork went and moves the pod on.
func (m *machine) finishWork(logger klog.Logger, uid types.UID, work podWork, res workResult) []action {
	st := m.pods[uid]
	if st == nil {
		return nil
	}
	now := m.clock.Now()
	if res.ran {
		st.lastSync = now
	}
	var acts []action
	transition := false
	switch {
	case errors.Is(res.err, context.Canceled):
		logger.V(2).Info("Sync exited with context cancellation error", "workType", work.State)
	case res.err != nil:
		logger.Error(res.err, "Error syncing pod, skipping", "workType", work.State)
	case work.State == TerminatedPod:
		logger.V(4).Info("Pod is complete and the worker can now stop")
		st.finished = true
		return m.release(uid, st)
	case work.State == TerminatingPod && work.Options.RunningPod != nil:
		logger.V(4).Info("Pod terminated all orphaned containers successfully and worker can now stop")
		st.terminatedAt, st.finished = now, true
		acts = m.release(uid, st)
		// A runtime-only pod is not desired by anyone: forget it at once.
		delete(m.pods, uid)
		return acts
	case work.State == TerminatingPod:
		logger.V(4).Info("Pod terminated all containers successfully")
		st.terminatedAt = now
		for _, ch := range st.notifyPostTerminating {
			acts = append(acts, action{kind: actClose, uid: uid, ch: ch})
		}
		st.notifyPostTerminating, st.statusPostTerminating = nil, nil
		acts = append(acts, m.requeueLast(uid, st)...)
		transition = true
	case res.isTerminal:
		logger.V(4).Info("Pod indicated lifecycle completed naturally and should now terminate")
		if st.terminatingAt.IsZero() {
			st.terminatingAt = now
		}
		st.startedTerminating = true
		if st.gracePeriod == 0 {
			st.gracePeriod = m.defaultGracePeriod(st)
		}
		acts = append(acts, m.requeueLast(uid, st)...)
		transition = true
	}

	requeue := action{kind: actEnqueue, uid: uid}
	switch {
	case transition:
		// The next phase runs now; the queue entry only guards against a lost wake-up.
	case res.err == nil:
		requeue.delay, requeue.jitter = m.resyncInterval, resyncJitterFactor
	case strings.Contains(res.err.Error(), NetworkNotReadyErrorMsg):
		requeue.delay, requeue.jitter = backOffOnTransientError, backOffJitterFactor
	default:
		requeue.delay, requeue.jitter = m.backOffPeriod, backOffJitterFactor
	}
	return append(acts, requeue)
}

// syncKnownPods reports the known pods and forgets or terminates the ones not desired.
func (m *machine) syncKnownPods(logger klog.Logger, desired []*v1.Pod) (map[types.UID]PodWorkerSync, []action) {
	known := make(map[types.UID]bool, len(desired))
	for _, pod := range desired {
		known[pod.UID] = true
	}
	m.synced = true
	var acts []action
	workers := make(map[types.UID]PodWorkerSync, len(m.pods))
	uids := make([]types.UID, 0, len(m.pods))
	for uid := range m.pods {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	for _, uid := range uids {
		st := m.pods[uid]
		orphan := !known[uid]
		if st.restartRequested || orphan {
			removed, a := m.removeTerminatedWorker(logger, uid, st, orphan)
			acts = append(acts, a...)
			if removed {
				continue
			}
		}
		sync := PodWorkerSync{State: st.workType(), Orphan: orphan}
		if pod := st.lastPod(); pod != nil {
			sync.HasConfig = true
			sync.Static = nodetypes.IsStaticPod(pod)
		}
		workers[uid] = sync
	}
	return workers, acts
}

// removeTerminatedWorker forgets a finished pod. An orphan that is not finished is driven to
// completion instead (nobody else will send it updates).
func (m *machine) removeTerminatedWorker(logger klog.Logger, uid types.UID, st *podState, orphan bool) (bool, []action) {
	logger = logger.WithValues("podUID", uid)
	if !st.finished {
		if !orphan {
			logger.V(4).Info("Pod worker has been requested for removal but is still not fully terminated")
			return false, nil
		}
		st.deleted = true
		switch {
		case !st.started() && !st.observedRuntime:
			logger.V(4).Info("Pod is orphaned and has not been started")
		case !st.terminationRequested():
			st.terminatingAt = m.clock.Now()
			st.gracePeriod = m.defaultGracePeriod(st)
			logger.V(4).Info("Pod is orphaned and still running, began terminating")
			return false, m.requeueLast(uid, st)
		default:
			logger.V(4).Info("Pod is orphaned and still terminating, notified the pod worker")
			return false, m.requeueLast(uid, st)
		}
	}
	if st.restartRequested {
		logger.V(4).Info("Pod has been terminated but another pod with the same UID was created, remove history to allow restart")
	} else {
		logger.V(4).Info("Pod has been terminated and is no longer known to the kubelet, remove all history")
	}
	delete(m.pods, uid)
	acts := m.release(uid, st)
	m.pruneWaiting(st.fullName)
	if st.hasWorker {
		acts = append(acts, action{kind: actStopWorker, uid: uid})
	}
	return true, acts
}

// The queries other loops ask.

func (m *machine) isPodKnownTerminated(uid types.UID) bool {
	st, ok := m.pods[uid]
	return ok && st.terminated()
}

func (m *machine) couldHaveRunningContainers(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return !st.terminated()
	}
	return !m.synced
}

func (m *machine) shouldPodBeFinished(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.finished
	}
	return m.synced
}

func (m *machine) isPodTerminationRequested(uid types.UID) bool {
	st, ok := m.pods[uid]
	return ok && st.terminationRequested()
}

func (m *machine) shouldPodContainersBeTerminating(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.startedTerminating
	}
	return m.synced
}

func (m *machine) shouldPodRuntimeBeRemoved(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.terminated()
	}
	return m.synced
}

func (m *machine) shouldPodContentBeRemoved(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.evicted || (st.deleted && st.terminated())
	}
	return m.synced
}

func (m *machine) isPodForMirrorPodTerminatingByFullName(fullName string) bool {
	uid, ok := m.startedByFullName[fullName]
	if !ok {
		return false
	}
	st, ok := m.pods[uid]
	if !ok || st.lastPod() == nil || !nodetypes.IsStaticPod(st.lastPod()) {
		return false
	}
	return st.terminationRequested() && !st.terminated()
}
