package memory

import (
	"context"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// GetContainerEvents streams the runtime's container events to containerEventsCh until ctx
// ends, as containerd 1.7's CRI does: CREATED, STARTED, STOPPED and DELETED for every
// container and for every sandbox (a sandbox's events carry its own id as the container id),
// each with the pod sandbox's status. A scripted exit is sent when it is due, from a timer.
// Like containerd, the runtime never waits for a slow subscriber: an event that does not fit
// in containerEventsCh is dropped (and counted in Counts), and the node agent's relist finds
// the change instead. It returns nil once ctx ends.
func (r *Runtime) GetContainerEvents(ctx context.Context, containerEventsCh chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	r.mu.Lock()
	r.advance()
	r.subscribers = append(r.subscribers, containerEventsCh)
	r.armExitTimer()
	r.mu.Unlock()
	if connectionEstablishedCallback != nil {
		connectionEstablishedCallback(nil)
	}
	<-ctx.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.subscribers, containerEventsCh); i >= 0 {
		r.subscribers = slices.Delete(r.subscribers, i, i+1)
	}
	r.armExitTimer()
	return nil
}

// emit sends one event of container (or sandbox) id in sandbox s, both in their new state,
// to every subscriber without waiting. Caller holds r.mu.
func (r *Runtime) emit(id string, s *sandbox, t runtimeapi.ContainerEventType, at int64) {
	if len(r.subscribers) == 0 {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: t,
		CreatedAt:          at,
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{
			Id:        s.id,
			Metadata:  s.metadata,
			State:     s.state,
			CreatedAt: s.createdAt,
			Labels:    s.labels,
		},
	}
	for _, ch := range r.subscribers {
		select {
		case ch <- ev:
		default:
			r.droppedEvents++
		}
	}
}

// armExitTimer makes sure a timer fires at the soonest scripted exit while anyone listens
// for events: without a subscriber exits stay lazy (every call evaluates them), with one
// the STOPPED event must be sent on time. One timer per runtime at most. Caller holds r.mu.
func (r *Runtime) armExitTimer() {
	var due int64
	if len(r.subscribers) > 0 && len(r.deadlines) > 0 {
		due = r.deadlines[0].deadline
	}
	if due == r.exitTimerAt {
		return
	}
	if r.exitTimer != nil {
		r.exitTimer.Stop()
		r.exitTimer = nil
	}
	r.exitTimerAt = due
	if due == 0 {
		return
	}
	d := time.Duration(due - r.clock.Now().UnixNano())
	// In a goroutine of its own: a fake clock calls f while it holds its lock, and
	// exitsDue reads the clock.
	r.exitTimer = r.clock.AfterFunc(max(d, 0), func() { go r.exitsDue() })
}

// exitsDue runs from the exit timer: it ends the containers whose exit is due, which sends
// their events, and arms the timer for the next.
func (r *Runtime) exitsDue() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exitTimer, r.exitTimerAt = nil, 0
	r.advance()
}
