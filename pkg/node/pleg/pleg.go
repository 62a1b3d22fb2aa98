// Package pleg is the node agent's pod lifecycle event generator and its pod status cache: the
// module seed 000 starts just before syncLoop ("启动 pleg 该模块主要用于周期性地向 container
// runtime 刷新当前所有容器的状态" — start the PLEG, which periodically refreshes the state of
// every container from the container runtime).
//
// GenericPLEG relists the runtime every relistPeriod (1 s), keeps one snapshot of every pod's
// container and sandbox states, and turns the difference between the old and the new snapshot
// into PodLifecycleEvents (a pure function, see computeEvents). Pods with events get a fresh
// status in the Cache, then their events go to the channel Watch returns, which syncLoopIteration
// reads as plegCh. When the runtime streams CRI container events, each event refreshes its pod at
// once through the same snapshot, so a container start is seen without waiting for the relist,
// and the relist, still running as the safety net, does not report it twice.
package pleg

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// PodLifeCycleEventType is what happened to a pod's container.
type PodLifeCycleEventType string

const (
	// ContainerStarted: the container is now running.
	ContainerStarted PodLifeCycleEventType = "ContainerStarted"
	// ContainerDied: the container is now exited (or vanished while not exited).
	ContainerDied PodLifeCycleEventType = "ContainerDied"
	// ContainerRemoved: the container no longer exists in the runtime.
	ContainerRemoved PodLifeCycleEventType = "ContainerRemoved"
	// PodSync: the pod needs a sync for a change no single container event describes (its
	// status was read again after a failure to read it).
	PodSync PodLifeCycleEventType = "PodSync"
	// ContainerChanged: the container is in a state the node agent does not act on (created,
	// unknown). It refreshes the cache but, as upstream, is not sent to Watch's channel.
	ContainerChanged PodLifeCycleEventType = "ContainerChanged"
)

// PodLifecycleEvent is one change of a pod seen in the runtime.
type PodLifecycleEvent struct {
	// ID is the pod's UID.
	ID types.UID
	// Type is what happened.
	Type PodLifeCycleEventType
	// Data is the container (or sandbox) ID string, without the runtime prefix, for container
	// events; nil for PodSync.
	Data interface{}
}

// PodLifecycleEventGenerator produces the events syncLoop reacts to.
type PodLifecycleEventGenerator interface {
	// Start starts the generator's goroutines and returns at once; they run until ctx ends.
	Start(ctx context.Context)
	// Watch is the channel of events (one consumer: syncLoop).
	Watch() chan *PodLifecycleEvent
	// Healthy is false when no relist has finished within the last 3 minutes (10 while the
	// runtime streams container events).
	Healthy() (bool, error)
}

// EventSource is the runtime's stream of container events (CRI GetContainerEvents, as
// k8s.io/cri-api's RuntimeService has it). GetContainerEvents calls established once the
// stream is open, then sends events to ch until the stream breaks (it returns the error) or
// ctx ends.
type EventSource interface {
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// Cache holds the runtime status of every pod the runtime knows, with when it was read. Pod
// workers read it before each sync so they act on fresh runtime state.
type Cache interface {
	// Get returns the pod's cached status and the error of reading it; a pod the cache does not
	// hold has an empty status (ID only): the runtime had nothing of it.
	Get(types.UID) (*container.PodStatus, error)
	// Set stores a status read at the given time, unless the cache already holds a newer one;
	// it reports whether it stored it.
	Set(types.UID, *container.PodStatus, error, time.Time) (updated bool)
	// GetNewerThan blocks until the cache holds a status of the pod read after the given time,
	// or the cache as a whole (UpdateTime) is newer than it.
	GetNewerThan(types.UID, time.Time) (*container.PodStatus, error)
	// Delete forgets a pod.
	Delete(types.UID)
	// UpdateTime records that every entry reflects the runtime as of the given time.
	UpdateTime(time.Time)
}

// ContextCache is a Cache whose blocking read can be abandoned; the cache NewCache returns
// implements it, and pod workers use it so that no goroutine outlives its context.
type ContextCache interface {
	// GetNewerThanContext is GetNewerThan that returns ctx.Err() once ctx ends.
	GetNewerThanContext(ctx context.Context, uid types.UID, minTime time.Time) (*container.PodStatus, error)
}
