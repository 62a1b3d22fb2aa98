package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// subscribe follows r's container events into a buffered channel until the test ends.
func subscribe(t *testing.T, r *Runtime, buffer int) chan *runtimeapi.ContainerEventResponse {
	t.Helper()
	ch := make(chan *runtimeapi.ContainerEventResponse, buffer)
	ctx, cancel := context.WithCancel(context.Background())
	established := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- r.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	<-established
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("GetContainerEvents returned %v after its context ended", err)
		}
	})
	return ch
}

// timerOf is r's exit timer (nil when none is armed).
func (r *Runtime) timerOf() clock.Timer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exitTimer
}

// eventLine is "TYPE id-kind sandbox-state" for comparing events.
func eventLine(ev *runtimeapi.ContainerEventResponse, names map[string]string) string {
	t := strings.TrimSuffix(strings.TrimPrefix(ev.ContainerEventType.String(), "CONTAINER_"), "_EVENT")
	return fmt.Sprintf("%s %s %s", t, names[ev.ContainerId], ev.PodSandboxStatus.GetState())
}

// wantEvents fails the test unless the events queued now are want, in order.
func wantEvents(t *testing.T, ch chan *runtimeapi.ContainerEventResponse, names map[string]string, what string, want ...string) {
	t.Helper()
	if got := drain(ch, names); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// drain reads the events queued now.
func drain(ch chan *runtimeapi.ContainerEventResponse, names map[string]string) []string {
	var got []string
	for {
		select {
		case ev := <-ch:
			got = append(got, eventLine(ev, names))
		default:
			return got
		}
	}
}

func TestContainerEventsFollowTheLifecycle(t *testing.T) {
	r, clk := newRuntime(t, Options{})
	ch := subscribe(t, r, 100)
	sb := podSandbox("pod", map[string]string{AnnotationRunSeconds + ".job": "5"})
	sbID := runPod(t, r, sb)
	app := createAndStart(t, r, sbID, sb, "app")
	job := createAndStart(t, r, sbID, sb, "job")
	names := map[string]string{sbID: "sandbox", app: "app", job: "job"}
	wantEvents(t, ch, names, "events of a start",
		"CREATED sandbox SANDBOX_READY", "STARTED sandbox SANDBOX_READY",
		"CREATED app SANDBOX_READY", "STARTED app SANDBOX_READY",
		"CREATED job SANDBOX_READY", "STARTED job SANDBOX_READY",
	)

	// The scripted exit is sent by the runtime's timer, with no CRI call from anyone.
	clk.Step(5 * time.Second)
	select {
	case ev := <-ch:
		if got := eventLine(ev, names); got != "STOPPED job SANDBOX_READY" {
			t.Fatalf("at the scripted exit: %q", got)
		}
		if ev.CreatedAt != t0.Add(5*time.Second).UnixNano() {
			t.Errorf("exit event stamped %v after start, want 5s", time.Duration(ev.CreatedAt-t0.UnixNano()))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the scripted exit")
	}

	if err := r.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if err := r.StopPodSandbox(ctx, sbID); err != nil { // again: no event
		t.Fatal(err)
	}
	if err := r.RemovePodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, ch, names, "events of a stop and removal",
		"STOPPED app SANDBOX_READY", "STOPPED sandbox SANDBOX_NOTREADY",
		"DELETED app SANDBOX_NOTREADY", "DELETED job SANDBOX_NOTREADY", "DELETED sandbox SANDBOX_NOTREADY",
	)
	if r.timerOf() != nil {
		t.Error("an exit timer is armed with no exit pending")
	}
}

func TestContainerEventsFailedStartAndRemove(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	ch := subscribe(t, r, 100)
	sb := podSandbox("pod", map[string]string{AnnotationFailStart + ".bad": "exec: not found"})
	sbID := runPod(t, r, sb)
	bad := create(t, r, sbID, sb, "bad")
	if err := r.StartContainer(ctx, bad); err == nil {
		t.Fatal("the scripted start failure did not fail")
	}
	if err := r.RemoveContainer(ctx, bad); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{sbID: "sandbox", bad: "bad"}
	wantEvents(t, ch, names, "events",
		"CREATED sandbox SANDBOX_READY", "STARTED sandbox SANDBOX_READY",
		"CREATED bad SANDBOX_READY", "STOPPED bad SANDBOX_READY", "DELETED bad SANDBOX_READY",
	)
	if md := sandboxStatus(t, r, sbID).Metadata; md.Uid != "uid-pod" {
		t.Fatalf("sandbox metadata %v", md)
	}
}

// A full subscriber loses events rather than stalling the runtime (containerd's rule); the
// loss is counted.
func TestContainerEventsDroppedWhenFull(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	ch := subscribe(t, r, 3)
	for i := range 3 {
		sb := podSandbox(fmt.Sprint("pod", i), nil)
		runPod(t, r, sb)
	}
	if n := r.Counts().DroppedEvents; n != 3 {
		t.Fatalf("dropped %d events, want 3 (6 sent into room for 3)", n)
	}
	if len(ch) != 3 {
		t.Fatalf("%d events queued, want 3", len(ch))
	}
}

// Without a subscriber no timer is armed: exits stay lazy, as the runtime's relisting user
// (the node agent on containerd 1.6's terms) needs no more.
func TestExitTimerOnlyWhileSubscribed(t *testing.T) {
	r, clk := newRuntime(t, Options{})
	sb := podSandbox("pod", map[string]string{AnnotationRunSeconds: "30"})
	sbID := runPod(t, r, sb)
	createAndStart(t, r, sbID, sb, "app")
	if r.timerOf() != nil {
		t.Fatal("a timer is armed with no subscriber")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	established := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.GetContainerEvents(ctx, make(chan *runtimeapi.ContainerEventResponse, 10), func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	<-established
	if r.timerOf() == nil {
		t.Fatal("no timer armed for the pending exit while subscribed")
	}
	cancel()
	<-done
	if r.timerOf() != nil {
		t.Fatal("the timer outlived the last subscriber")
	}
	clk.Step(31 * time.Second)
	if n := r.Counts(); n.Exited != 1 {
		t.Fatalf("the lazy exit was not evaluated: %+v", n)
	}
}
