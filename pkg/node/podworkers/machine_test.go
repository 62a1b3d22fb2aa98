package podworkers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/container"
	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// podBuilder builds test pods: newPod("a").name("web").grace(30).deleted(5).static().
type podBuilder struct{ *v1.Pod }

func newPod(uid string) podBuilder {
	return podBuilder{&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "ns"}}}
}
func (b podBuilder) name(n string) podBuilder { b.Name = n; return b }
func (b podBuilder) grace(s int64) podBuilder {
	b.Spec.TerminationGracePeriodSeconds = &s
	return b
}
func (b podBuilder) deleted(s int64) podBuilder {
	now := metav1.NewTime(t0)
	b.DeletionTimestamp, b.DeletionGracePeriodSeconds = &now, &s
	return b
}
func (b podBuilder) phase(p v1.PodPhase) podBuilder { b.Status.Phase = p; return b }
func (b podBuilder) static() podBuilder {
	b.Annotations = map[string]string{nodetypes.ConfigSourceAnnotationKey: nodetypes.FileSource}
	return b
}

func create(b podBuilder) *UpdatePodOptions {
	return &UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: b.Pod}
}
func updateOf(b podBuilder) *UpdatePodOptions {
	return &UpdatePodOptions{UpdateType: nodetypes.SyncPodUpdate, Pod: b.Pod}
}
func kill(b podBuilder, override *int64, ch chan struct{}) *UpdatePodOptions {
	opts := &UpdatePodOptions{UpdateType: nodetypes.SyncPodKill, Pod: b.Pod,
		KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: override}}
	if ch != nil {
		opts.KillPodOptions.CompletedCh = ch
	}
	return opts
}
func runtimeKill(uid string) *UpdatePodOptions {
	return &UpdatePodOptions{UpdateType: nodetypes.SyncPodKill, RunningPod: &container.Pod{ID: types.UID(uid), Name: uid, Namespace: "ns"}}
}

// step is one call on the machine and what it must give back.
type step struct {
	advance time.Duration // move the clock first

	update          *UpdatePodOptions
	runtimeTerminal bool

	start string // startWork(start); want is the work ("sync/create", "terminating/gp=30", ...)

	finish string // finishWork(finish) of the work its last start returned
	res    workResult

	known []*v1.Pod // syncKnownPods(known); want is the reported states
	sync  bool      // call syncKnownPods even with no pods

	want string // the work or the known pods
	// acts is the actions the step must return, rendered ("start:a wake:a"); "-" for none,
	// "" to not check.
	acts string
	// check is a query on the machine after the step.
	check func(t *testing.T, m *machine)
}

func renderActs(acts []action) string {
	if len(acts) == 0 {
		return "-"
	}
	var out []string
	for _, a := range acts {
		switch a.kind {
		case actStartWorker:
			out = append(out, "start:"+string(a.uid))
		case actWake:
			out = append(out, "wake:"+string(a.uid))
		case actCancel:
			out = append(out, "cancel:"+string(a.uid))
		case actStopWorker:
			out = append(out, "stop:"+string(a.uid))
		case actClose:
			out = append(out, "close:"+string(a.uid))
		case actEnqueue:
			out = append(out, fmt.Sprintf("enqueue:%s@%v", a.uid, a.delay))
		}
	}
	return strings.Join(out, " ")
}

func renderWork(w podWork, s workStep) string {
	switch s {
	case stepIdle:
		return "idle"
	case stepExit:
		return "exit"
	}
	switch w.State {
	case TerminatingPod:
		prefix := "terminating"
		if w.Options.RunningPod != nil {
			prefix = "runtime-terminating"
		}
		return fmt.Sprintf("%s/gp=%d", prefix, *w.GracePeriod)
	case TerminatedPod:
		return "terminated"
	}
	return "sync/" + w.Options.UpdateType.String()
}

func renderKnown(known map[types.UID]PodWorkerSync) string {
	var out []string
	for uid, s := range known {
		e := fmt.Sprintf("%s=%s", uid, s.State)
		if s.Orphan {
			e += ",orphan"
		}
		if !s.HasConfig {
			e += ",noconfig"
		}
		if s.Static {
			e += ",static"
		}
		out = append(out, e)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, " ")
}

func runSteps(t *testing.T, steps []step) *machine {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	m := newMachine(clk, time.Minute, 10*time.Second)
	logger := klog.Background()
	works := map[string]podWork{}
	for i, s := range steps {
		clk.Step(s.advance)
		var acts []action
		got := ""
		switch {
		case s.update != nil:
			acts = m.update(logger, *s.update, s.runtimeTerminal)
		case s.start != "":
			w, st, a := m.startWork(types.UID(s.start))
			acts, got = a, renderWork(w, st)
			works[s.start] = w
		case s.finish != "":
			acts = m.finishWork(logger, types.UID(s.finish), works[s.finish], s.res)
		case s.known != nil || s.sync:
			var known map[types.UID]PodWorkerSync
			known, acts = m.syncKnownPods(logger, s.known)
			got = renderKnown(known)
		}
		if s.want != "" && got != s.want {
			t.Errorf("step %d: got %q, want %q", i, got, s.want)
		}
		if s.acts != "" && renderActs(acts) != s.acts {
			t.Errorf("step %d: actions %q, want %q", i, renderActs(acts), s.acts)
		}
		if s.check != nil {
			s.check(t, m)
		}
	}
	return m
}

func ok() workResult { return workResult{ran: true} }

func TestTransitions(t *testing.T) {
	a := newPod("a").grace(30)
	done := make(chan struct{})
	tests := []struct {
		name  string
		steps []step
	}{
		{"create, sync, resync", []step{
			{update: create(a), acts: "start:a wake:a"},
			{start: "a", want: "sync/create", acts: "-"},
			{finish: "a", res: ok(), acts: "enqueue:a@1m0s"},
			{start: "a", want: "idle"},
			{update: &UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: a.Pod}, acts: "wake:a"},
			{start: "a", want: "sync/sync"},
			{finish: "a", res: workResult{ran: true, err: errors.New("image pull failed")}, acts: "enqueue:a@10s"},
			{start: "a", want: "idle"},
		}},
		{"updates coalesce: only the latest pending one runs", []step{
			{update: create(a)},
			{update: updateOf(a.name("a")), acts: "wake:a"},
			{update: &UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: a.Pod}},
			{start: "a", want: "sync/sync"},
			{start: "a", want: "idle"},
		}},
		{"kill while syncing: cancel, terminate, clean up, finish", []step{
			{update: create(a)},
			{start: "a", want: "sync/create"},
			{update: kill(a, nil, done), acts: "wake:a cancel:a", check: func(t *testing.T, m *machine) {
				if !m.isPodTerminationRequested("a") || m.shouldPodContainersBeTerminating("a") {
					t.Error("want termination requested, not yet seen by the worker")
				}
			}},
			{finish: "a", res: workResult{ran: true, err: context.Canceled}, acts: "enqueue:a@10s"},
			{start: "a", want: "terminating/gp=30", check: func(t *testing.T, m *machine) {
				if !m.shouldPodContainersBeTerminating("a") || !m.couldHaveRunningContainers("a") {
					t.Error("want terminating with containers possibly running")
				}
			}},
			{finish: "a", res: ok(), acts: "close:a wake:a enqueue:a@0s", check: func(t *testing.T, m *machine) {
				if !m.isPodKnownTerminated("a") || m.couldHaveRunningContainers("a") || !m.shouldPodRuntimeBeRemoved("a") {
					t.Error("want terminated")
				}
				if m.shouldPodBeFinished("a") || m.shouldPodContentBeRemoved("a") {
					t.Error("not finished, not deleted: content stays")
				}
			}},
			{start: "a", want: "terminated"},
			{finish: "a", res: ok(), acts: "-", check: func(t *testing.T, m *machine) {
				if !m.shouldPodBeFinished("a") {
					t.Error("want finished")
				}
			}},
			{start: "a", want: "exit"},
			{update: &UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: a.Pod}, acts: "-"},
			{sync: true, want: "-", acts: "-", check: func(t *testing.T, m *machine) {
				if len(m.pods) != 0 {
					t.Error("a finished pod no longer desired must be forgotten")
				}
			}},
		}},
		{"a failed terminating sync is retried; the kill's channel closes only on success", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: ok()},
			{update: kill(a, nil, done), acts: "wake:a cancel:a"},
			{start: "a", want: "terminating/gp=30"},
			{finish: "a", res: workResult{ran: true, err: errors.New("kill failed")}, acts: "enqueue:a@10s"},
			{update: &UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: a.Pod}, acts: "wake:a"},
			{start: "a", want: "terminating/gp=30"},
			{finish: "a", res: ok(), acts: "close:a wake:a enqueue:a@0s"},
		}},
		{"deletion timestamp: terminating with the deletion grace period", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: ok()},
			{update: updateOf(newPod("a").grace(30).deleted(5)), acts: "wake:a cancel:a"},
			{start: "a", want: "terminating/gp=5"},
			{finish: "a", res: ok()},
			{start: "a", want: "terminated"},
			{finish: "a", res: ok(), check: func(t *testing.T, m *machine) {
				if !m.shouldPodContentBeRemoved("a") {
					t.Error("a deleted, terminated pod's content should be removed")
				}
			}},
		}},
		{"SyncPod reports terminal: terminating with the spec grace period", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: workResult{ran: true, isTerminal: true}, acts: "wake:a enqueue:a@0s"},
			{start: "a", want: "terminating/gp=30"},
		}},
		{"terminal phase from the API: terminating", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: ok()},
			{update: updateOf(newPod("a").grace(30).phase(v1.PodSucceeded)), acts: "wake:a cancel:a"},
			{start: "a", want: "terminating/gp=30"},
		}},
		{"terminal pod with nothing running at first sight: straight to clean-up", []step{
			{update: create(newPod("a").phase(v1.PodFailed)), runtimeTerminal: true, acts: "start:a wake:a"},
			{start: "a", want: "terminated"},
		}},
		{"terminal pod still running at first sight: terminates", []step{
			{update: create(newPod("a").grace(30).phase(v1.PodFailed)), acts: "start:a wake:a cancel:a"},
			{start: "a", want: "terminating/gp=30"},
		}},
		{"eviction: content can go while terminating", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: ok()},
			{update: &UpdatePodOptions{UpdateType: nodetypes.SyncPodKill, Pod: a.Pod, KillPodOptions: &KillPodOptions{Evict: true}},
				check: func(t *testing.T, m *machine) {
					if !m.shouldPodContentBeRemoved("a") {
						t.Error("an evicted pod's content should be removed")
					}
				}},
		}},
		{"kill of a terminated pod closes its channel at once", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: ok()},
			{update: kill(a, nil, nil)},
			{start: "a"},
			{finish: "a", res: ok()},
			{update: kill(a, nil, make(chan struct{})), acts: "close:a wake:a"},
			{start: "a", want: "terminated"},
		}},
		{"create with the same UID while terminating: restart after the old one finished", []step{
			{update: create(a)},
			{start: "a"},
			{update: kill(a, nil, nil)},
			{update: create(a), acts: "-"},
			{finish: "a", res: workResult{ran: true, err: context.Canceled}},
			{start: "a", want: "terminating/gp=30"},
			{known: []*v1.Pod{a.Pod}, want: "a=terminating"},
			{finish: "a", res: ok()},
			{start: "a", want: "terminated"},
			{finish: "a", res: ok()},
			{start: "a", want: "exit"},
			{known: []*v1.Pod{a.Pod}, want: "-", acts: "-"},
			{update: create(a), acts: "start:a wake:a"},
			{start: "a", want: "sync/create"},
		}},
		{"network not ready: retry in 1 s", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: workResult{ran: true, err: errors.New("network is not ready: cni config uninitialized")}, acts: "enqueue:a@1s"},
		}},
		{"runtime-only pod: only a kill, then forgotten", []step{
			{update: &UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, RunningPod: &container.Pod{ID: "r"}}, acts: "-"},
			{update: runtimeKill("r"), acts: "start:r wake:r cancel:r"},
			{start: "r", want: "runtime-terminating/gp=1"},
			{finish: "r", res: ok(), acts: "-", check: func(t *testing.T, m *machine) {
				if _, ok := m.pods["r"]; ok {
					t.Error("a terminated runtime pod must be forgotten")
				}
			}},
			{start: "r", want: "exit"},
		}},
		{"runtime kill of a known pod terminates it as itself", []step{
			{update: create(a)},
			{start: "a"},
			{finish: "a", res: ok()},
			{update: runtimeKill("a"), acts: "wake:a cancel:a"},
			{start: "a", want: "terminating/gp=30"},
		}},
		{"an update without a pod is ignored", []step{
			{update: &UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate}, acts: "-"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.steps) })
	}
}

func TestGracePeriodRules(t *testing.T) {
	tests := []struct {
		name          string
		pod           podBuilder
		current       int64
		override      *int64
		want          int64
		wantShortened bool
	}{
		{"spec", newPod("a").grace(30), 0, nil, 30, false},
		{"no spec: at least 1", newPod("a"), 0, nil, 1, false},
		{"override wins over spec", newPod("a").grace(30), 0, ptr.To[int64](10), 10, false},
		{"override may be longer than spec when first", newPod("a").grace(30), 0, ptr.To[int64](60), 60, false},
		{"deletion grace period wins over spec", newPod("a").grace(30).deleted(5), 0, nil, 5, false},
		{"the shorter of deletion and override", newPod("a").grace(30).deleted(5), 0, ptr.To[int64](2), 2, false},
		{"the shorter of deletion and override (deletion)", newPod("a").grace(30).deleted(5), 0, ptr.To[int64](20), 5, false},
		{"zero becomes 1", newPod("a").grace(30), 0, ptr.To[int64](0), 1, false},
		{"a later kill shortens", newPod("a").grace(30), 30, ptr.To[int64](10), 10, true},
		{"a later kill may not lengthen", newPod("a").grace(30), 10, ptr.To[int64](20), 10, false},
		{"a later update keeps the period", newPod("a").grace(60), 10, nil, 10, false},
		{"a later deletion shortens", newPod("a").grace(30).deleted(3), 30, nil, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, shortened := effectiveGracePeriod(tt.current, tt.pod.Pod, tt.override)
			if got != tt.want || shortened != tt.wantShortened {
				t.Errorf("got %d (shortened %v), want %d (shortened %v)", got, shortened, tt.want, tt.wantShortened)
			}
		})
	}
}

func TestGracePeriodAcrossKills(t *testing.T) {
	a := newPod("a").grace(30)
	runSteps(t, []step{
		{update: create(a)},
		{start: "a"},
		{finish: "a", res: ok()},
		{update: kill(a, ptr.To[int64](20), nil), acts: "wake:a cancel:a"},
		{update: kill(a, ptr.To[int64](25), nil), acts: "wake:a"}, // longer: ignored, no cancel
		{start: "a", want: "terminating/gp=20"},
		{update: kill(a, ptr.To[int64](3), nil), acts: "wake:a cancel:a"}, // shorter: cancels the running call
		{finish: "a", res: workResult{ran: true, err: context.Canceled}},
		{start: "a", want: "terminating/gp=3"},
		{update: updateOf(newPod("a").grace(30).deleted(10)), acts: "wake:a"},
		{finish: "a", res: workResult{ran: true, err: errors.New("not yet")}},
		{start: "a", want: "terminating/gp=3"},
	})
}

func TestSameFullNameWaits(t *testing.T) {
	old := newPod("old").name("web").grace(30)
	next := newPod("new").name("web").grace(30)
	third := newPod("third").name("web").grace(30)
	runSteps(t, []step{
		{update: create(old)},
		{start: "old", want: "sync/create"},
		{finish: "old", res: ok()},
		{update: kill(old, nil, nil)},
		{update: create(next), acts: "start:new wake:new"},
		{update: create(third), acts: "start:third wake:third"},
		// new waits for web_ns: back to the queue.
		{start: "new", want: "idle", acts: "enqueue:new@10s"},
		{start: "third", want: "idle", acts: "enqueue:third@10s"},
		{start: "old", want: "terminating/gp=30"},
		{finish: "old", res: ok()},
		// Containers stopped, but the old pod's resources are not released yet.
		{start: "new", want: "idle"},
		{start: "old", want: "terminated"},
		// Finished: the name is released and the first waiting pod is woken.
		{finish: "old", res: ok(), acts: "wake:new"},
		{start: "new", want: "sync/create", check: func(t *testing.T, m *machine) {
			if m.startedByFullName["web_ns"] != "new" {
				t.Errorf("web_ns held by %q", m.startedByFullName["web_ns"])
			}
		}},
		// third waits for new.
		{start: "third", want: "idle"},
		// third is deleted before it started: it stops without waiting (and without syncing).
		{update: kill(third, nil, nil), acts: "wake:third cancel:third"},
		{start: "third", want: "terminating/gp=30"},
	})
}

func TestIsPodForMirrorPodTerminatingByFullName(t *testing.T) {
	s := newPod("s").name("etcd").grace(30).static()
	a := newPod("a").name("api").grace(30)
	terminating := func(name string, want bool) func(t *testing.T, m *machine) {
		return func(t *testing.T, m *machine) {
			if got := m.isPodForMirrorPodTerminatingByFullName(name); got != want {
				t.Errorf("IsPodForMirrorPodTerminatingByFullName(%q) = %v, want %v", name, got, want)
			}
		}
	}
	runSteps(t, []step{
		{update: create(s)},
		{update: create(a)},
		{start: "s"},
		{start: "a"},
		{finish: "s", res: ok(), check: terminating("etcd_ns", false)},
		{update: kill(s, nil, nil), check: terminating("etcd_ns", true)},
		{update: kill(a, nil, nil), check: terminating("api_ns", false)}, // not a static pod
		{start: "s"},
		{finish: "s", res: ok(), check: terminating("etcd_ns", false)}, // terminated
	})
}

func TestSyncKnownPods(t *testing.T) {
	running := newPod("running").grace(30)
	waiting := newPod("waiting").name("running").grace(30)
	done := newPod("done").grace(30)
	static := newPod("static").static()
	runSteps(t, []step{
		{update: create(running)},
		{update: create(waiting)},
		{update: create(done)},
		{update: create(static)},
		{update: runtimeKill("orphan")},
		{start: "running"},
		{finish: "running", res: ok()},
		{start: "waiting", want: "idle"},
		{start: "static"},
		{start: "done"},
		{finish: "done", res: workResult{ran: true, isTerminal: true}},
		{start: "done"},
		{finish: "done", res: ok()},
		{start: "done"},
		{finish: "done", res: ok()},
		{start: "done", want: "exit"},
		{check: func(t *testing.T, m *machine) {
			if !m.couldHaveRunningContainers("unknown") || m.shouldPodBeFinished("unknown") {
				t.Error("before the first SyncKnownPods an unknown pod may be running")
			}
		}},
		// Everything still desired except done (finished: forgotten), running (orphaned
		// while running: terminates) and waiting (never started: forgotten).
		{known: []*v1.Pod{static.Pod}, want: "orphan=terminating,orphan,noconfig running=terminating,orphan static=sync,static",
			acts: "wake:running stop:waiting", check: func(t *testing.T, m *machine) {
				if m.couldHaveRunningContainers("unknown") || !m.shouldPodBeFinished("unknown") ||
					!m.shouldPodContentBeRemoved("unknown") || !m.shouldPodRuntimeBeRemoved("unknown") {
					t.Error("after SyncKnownPods an unknown pod is known not to run")
				}
				if m.isPodTerminationRequested("unknown") || m.isPodKnownTerminated("unknown") {
					t.Error("an unknown pod is neither terminating nor terminated")
				}
			}},
		{start: "running", want: "terminating/gp=30"},
		{start: "waiting", want: "exit"},
	})
}
