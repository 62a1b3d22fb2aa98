// Package podworkers is the node agent's podWorkers: seed 003's "通过dispatchWork把创建pod的工作
// 下发给podWorkers子模块做异步处理" (dispatchWork hands the work of creating a pod to the
// podWorkers submodule, which does it asynchronously). One goroutine per pod serializes that
// pod's work and drives it through syncing → terminating → terminated → finished by calling the
// node agent's syncPod, SyncTerminatingPod and SyncTerminatedPod (PodSyncer), each time on a pod
// status from the PLEG's cache newer than its previous sync.
//
// The states and their rules live in machine (no goroutines, no I/O, an injected clock); the
// podWorkers type is the thin driver that runs its actions: worker goroutines, cancellation of
// a running sync, the work queue that syncLoop's syncCh reads every second.
package podworkers

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/node/container"
	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// PodSyncer is what a pod worker calls; the node agent implements it. Its methods are called
// concurrently for different pods, never for the same pod.
type PodSyncer interface {
	// SyncPod makes the pod run as its spec says. isTerminal reports that the pod has reached
	// a terminal phase (all containers done and not to be restarted): it then terminates.
	SyncPod(ctx context.Context, updateType nodetypes.SyncPodType, pod, mirrorPod *v1.Pod, podStatus *container.PodStatus) (isTerminal bool, err error)
	// SyncTerminatingPod stops the pod's containers within gracePeriod (never nil) and
	// applies podStatusFn (may be nil) to the final status. It is called again, on error or
	// with a shorter grace period, until it succeeds.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error
	// SyncTerminatingRuntimePod stops a pod that only the runtime knows (an orphan).
	SyncTerminatingRuntimePod(ctx context.Context, runningPod *container.Pod) error
	// SyncTerminatedPod releases what the stopped pod still holds (volumes, cgroups, the final
	// status); once it succeeds the pod is finished on this node.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) error
}

// KillPodOptions say how to kill a pod.
type KillPodOptions struct {
	// CompletedCh is closed once the pod's containers have stopped (SyncTerminatingPod
	// succeeded), or at once if they already had.
	CompletedCh chan<- struct{}
	// Evict marks a kill by the node agent's eviction: the pod's content can be removed.
	Evict bool
	// PodStatusFunc, if set, adjusts the pod's final status (the last kill's wins).
	PodStatusFunc func(*v1.PodStatus)
	// PodTerminationGracePeriodSecondsOverride shortens the grace period.
	PodTerminationGracePeriodSecondsOverride *int64
}

// UpdatePodOptions is one update for a pod worker.
type UpdatePodOptions struct {
	// UpdateType is why: create, update, sync or kill.
	UpdateType nodetypes.SyncPodType
	// StartTime is when the update was made (for latency logs); optional.
	StartTime time.Time
	// Pod is the pod; required unless RunningPod is set.
	Pod *v1.Pod
	// MirrorPod is the static pod's mirror pod, if any.
	MirrorPod *v1.Pod
	// RunningPod is a pod only the runtime knows; only kills are accepted for it.
	RunningPod *container.Pod
	// KillPodOptions tune a kill.
	KillPodOptions *KillPodOptions
}

// PodWorkerState is where a pod is in its life on this node.
type PodWorkerState int

const (
	// SyncPod: the pod should be running; SyncPod is called.
	SyncPod PodWorkerState = iota
	// TerminatingPod: the pod must stop; SyncTerminatingPod is called.
	TerminatingPod
	// TerminatedPod: nothing runs any more; SyncTerminatedPod cleans up.
	TerminatedPod
)

func (s PodWorkerState) String() string {
	switch s {
	case SyncPod:
		return "sync"
	case TerminatingPod:
		return "terminating"
	case TerminatedPod:
		return "terminated"
	}
	return fmt.Sprintf("PodWorkerState(%d)", int(s))
}

// PodWorkerSync is one known pod as SyncKnownPods reports it.
type PodWorkerSync struct {
	// State is the pod's state.
	State PodWorkerState
	// Orphan: the pod is not among the desired pods any more.
	Orphan bool
	// HasConfig: the worker has the pod's spec (not only a runtime pod).
	HasConfig bool
	// Static: the pod is a static pod.
	Static bool
}

// PodWorkers serializes and tracks the work on each pod.
type PodWorkers interface {
	// UpdatePod hands an update to the pod's worker, starting the worker if needed. Updates
	// coalesce: a worker busy with a sync only sees the latest update afterwards.
	UpdatePod(options UpdatePodOptions)
	// SyncKnownPods reports every pod the workers know (except ones it forgets), forgets
	// finished pods no longer desired (or re-created with the same UID) and starts terminating
	// running pods that are no longer desired. The caller re-sends desired pods it does not
	// get back.
	SyncKnownPods(desiredPods []*v1.Pod) map[types.UID]PodWorkerSync
	// IsPodKnownTerminated: the pod's containers are known to have stopped.
	IsPodKnownTerminated(uid types.UID) bool
	// CouldHaveRunningContainers: the pod may have running containers (true for an unknown
	// pod until the first SyncKnownPods).
	CouldHaveRunningContainers(uid types.UID) bool
	// ShouldPodBeFinished: SyncTerminatedPod has succeeded (true for an unknown pod after the
	// first SyncKnownPods).
	ShouldPodBeFinished(uid types.UID) bool
	// IsPodTerminationRequested: the pod has been asked to stop.
	IsPodTerminationRequested(uid types.UID) bool
	// ShouldPodContainersBeTerminating: the worker has stopped syncing the pod, so no container
	// of it will start again.
	ShouldPodContainersBeTerminating(uid types.UID) bool
	// ShouldPodRuntimeBeRemoved: the pod's containers have stopped; runtime resources
	// (volumes, ...) can go.
	ShouldPodRuntimeBeRemoved(uid types.UID) bool
	// ShouldPodContentBeRemoved: the pod was evicted, or deleted and stopped; its content can
	// go.
	ShouldPodContentBeRemoved(uid types.UID) bool
	// IsPodForMirrorPodTerminatingByFullName: the static pod of that full name is stopping but
	// has not stopped (its mirror pod must not be deleted yet).
	IsPodForMirrorPodTerminatingByFullName(podFullName string) bool
	// Run bounds the workers' lives: it blocks until ctx ends, then cancels every worker and
	// returns once all have exited. Workers run (on a background context) whether or not Run
	// is called; after Run returns, updates are ignored.
	Run(ctx context.Context)
}

// PostSyncer is a PodSyncer that wants to know when a SyncPod has been recorded. The next
// sync of the pod waits for a runtime status read after that moment; a syncer that changed
// the runtime (started containers) can have the pod inspected right then, so that the next
// sync need not wait for the PLEG's periodic relist.
type PostSyncer interface {
	PodSyncRecorded(ctx context.Context, pod *v1.Pod)
}

// PanicReporter is a PodSyncer that reports a sync that panicked in the pod's status (the
// kubelet's InternalError waiting reason). The pod worker has recovered the panic, logged its
// stack, counted it and recorded a FailedSync event by then; the work is retried as a failed
// sync is, after the back-off.
type PanicReporter interface {
	PodSyncPanicked(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, err error)
}
