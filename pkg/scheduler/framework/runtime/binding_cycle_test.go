package runtime

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

func TestReserveAndUnreserve(t *testing.T) {
	tests := []struct {
		name        string
		b           func() *framework.Status
		wantCode    framework.Code
		wantMessage string
		wantPlugin  string
		wantCalls   []string
	}{
		{
			name:      "all reserve",
			wantCalls: []string{"A.Reserve", "B.Reserve", "C.Reserve"},
		},
		{
			name:        "a rejection stops, with the plugin",
			b:           func() *framework.Status { return framework.NewStatus(framework.Unschedulable, "taken") },
			wantCode:    framework.Unschedulable,
			wantMessage: "taken",
			wantPlugin:  "B",
			wantCalls:   []string{"A.Reserve", "B.Reserve"},
		},
		{
			name:        "an error stops, wrapped",
			b:           func() *framework.Status { return framework.NewStatus(framework.Error, "broken") },
			wantCode:    framework.Error,
			wantMessage: `running Reserve plugin "B": broken`,
			wantCalls:   []string{"A.Reserve", "B.Reserve"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			f := newFramework(t, []framework.Plugin{
				reservePlugin{&fake{name: "A", log: log}},
				reservePlugin{&fake{name: "B", log: log, reserve: tt.b}},
				reservePlugin{&fake{name: "C", log: log}},
			}, nil)
			state := newState(f)
			s := f.RunReservePluginsReserve(context.Background(), state, testPod, "n1")
			if s.Code() != tt.wantCode || s.Message() != tt.wantMessage || s.Plugin() != tt.wantPlugin {
				t.Errorf("status = %v (plugin %q), want %v: %q (plugin %q)", s, s.Plugin(), tt.wantCode, tt.wantMessage, tt.wantPlugin)
			}
			if diff := cmp.Diff(tt.wantCalls, log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}

	log := &callLog{}
	f := newFramework(t, []framework.Plugin{
		reservePlugin{&fake{name: "A", log: log}},
		reservePlugin{&fake{name: "B", log: log}},
		reservePlugin{&fake{name: "C", log: log}},
	}, nil)
	f.RunReservePluginsUnreserve(context.Background(), newState(f), testPod, "n1")
	if diff := cmp.Diff([]string{"C.Unreserve", "B.Unreserve", "A.Unreserve"}, log.get()); diff != "" {
		t.Errorf("Unreserve is not in reverse order (-want +got):\n%s", diff)
	}
}

func waitFor(d time.Duration) func() (*framework.Status, time.Duration) {
	return func() (*framework.Status, time.Duration) { return framework.NewStatus(framework.Wait), d }
}

func TestPermit(t *testing.T) {
	tests := []struct {
		name string
		a, b func() (*framework.Status, time.Duration)
		// act runs after RunPermitPlugins, before WaitOnPermit.
		act             func(f *Framework, clk *testingclock.FakeClock)
		wantPermitCode  framework.Code
		wantPermitMsg   string
		wantPending     []string
		wantWaitCode    framework.Code
		wantWaitMessage string
		wantWaitPlugin  string
	}{
		{
			name: "every plugin allows at once",
		},
		{
			name: "a plugin rejects",
			a: func() (*framework.Status, time.Duration) {
				return framework.NewStatus(framework.Unschedulable, "no"), 0
			},
			wantPermitCode: framework.Unschedulable,
			wantPermitMsg:  "no",
		},
		{
			name:           "a plugin fails",
			a:              func() (*framework.Status, time.Duration) { return framework.NewStatus(framework.Error, "broken"), 0 },
			wantPermitCode: framework.Error,
			wantPermitMsg:  `running Permit plugin "A": broken`,
		},
		{
			name:           "both wait, both allow",
			a:              waitFor(10 * time.Second),
			b:              waitFor(20 * time.Second),
			act:            func(f *Framework, _ *testingclock.FakeClock) { allow(f, "A"); allow(f, "B") },
			wantPermitCode: framework.Wait,
			wantPermitMsg:  "one or more plugins asked to wait and no plugin rejected pod",
			wantPending:    []string{"A", "B"},
		},
		{
			name:            "both wait, one allows, the other rejects",
			a:               waitFor(10 * time.Second),
			b:               waitFor(20 * time.Second),
			act:             func(f *Framework, _ *testingclock.FakeClock) { allow(f, "A"); reject(f, "B", "gang incomplete") },
			wantPermitCode:  framework.Wait,
			wantPermitMsg:   "one or more plugins asked to wait and no plugin rejected pod",
			wantPending:     []string{"A", "B"},
			wantWaitCode:    framework.Unschedulable,
			wantWaitMessage: "gang incomplete",
			wantWaitPlugin:  "B",
		},
		{
			name:            "the first timeout rejects",
			a:               waitFor(10 * time.Second),
			b:               waitFor(20 * time.Second),
			act:             func(_ *Framework, clk *testingclock.FakeClock) { clk.Step(10 * time.Second) },
			wantPermitCode:  framework.Wait,
			wantPermitMsg:   "one or more plugins asked to wait and no plugin rejected pod",
			wantPending:     []string{"A", "B"},
			wantWaitCode:    framework.Unschedulable,
			wantWaitMessage: "rejected due to timeout after waiting 10s at plugin A",
			wantWaitPlugin:  "A",
		},
		{
			name:            "timeouts are capped at 15 minutes",
			a:               waitFor(time.Hour),
			act:             func(_ *Framework, clk *testingclock.FakeClock) { clk.Step(15 * time.Minute) },
			wantPermitCode:  framework.Wait,
			wantPermitMsg:   "one or more plugins asked to wait and no plugin rejected pod",
			wantPending:     []string{"A"},
			wantWaitCode:    framework.Unschedulable,
			wantWaitMessage: "rejected due to timeout after waiting 15m0s at plugin A",
			wantWaitPlugin:  "A",
		},
		{
			name: "the pod is removed while waiting",
			a:    waitFor(10 * time.Second),
			act: func(f *Framework, _ *testingclock.FakeClock) {
				if !f.WaitingPods().RejectWaitingPod(testPod.UID) {
					panic("RejectWaitingPod did not reject")
				}
				if f.WaitingPods().RejectWaitingPod(testPod.UID) {
					panic("RejectWaitingPod rejected twice")
				}
			},
			wantPermitCode:  framework.Wait,
			wantPermitMsg:   "one or more plugins asked to wait and no plugin rejected pod",
			wantPending:     []string{"A"},
			wantWaitCode:    framework.Unschedulable,
			wantWaitMessage: "removed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			f := newFramework(t, []framework.Plugin{
				permitPlugin{&fake{name: "A", permit: tt.a}},
				permitPlugin{&fake{name: "B", permit: tt.b}},
			}, nil, WithClock(clk))
			ctx := context.Background()
			s := f.RunPermitPlugins(ctx, newState(f), testPod, "n1")
			if s.Code() != tt.wantPermitCode || s.Message() != tt.wantPermitMsg {
				t.Fatalf("RunPermitPlugins = %v, want %v: %q", s, tt.wantPermitCode, tt.wantPermitMsg)
			}
			if s.IsRejected() && s.Plugin() != "A" {
				t.Errorf("rejection from plugin %q, want A", s.Plugin())
			}
			wp := f.WaitingPods().GetWaitingPod(testPod.UID)
			if (wp != nil) != (tt.wantPending != nil) {
				t.Fatalf("waiting pod = %v, want one: %v", wp, tt.wantPending != nil)
			}
			if wp != nil {
				pending := wp.GetPendingPlugins()
				slices.Sort(pending)
				if diff := cmp.Diff(tt.wantPending, pending); diff != "" {
					t.Errorf("pending plugins (-want +got):\n%s", diff)
				}
			}
			if tt.act != nil {
				tt.act(f, clk)
			}
			ws := f.WaitOnPermit(ctx, testPod)
			if ws.Code() != tt.wantWaitCode || ws.Message() != tt.wantWaitMessage || ws.Plugin() != tt.wantWaitPlugin {
				t.Errorf("WaitOnPermit = %v (plugin %q), want %v: %q (plugin %q)", ws, ws.Plugin(), tt.wantWaitCode, tt.wantWaitMessage, tt.wantWaitPlugin)
			}
			if f.WaitingPods().GetWaitingPod(testPod.UID) != nil {
				t.Error("the pod is still waiting after WaitOnPermit")
			}
			if clk.HasWaiters() {
				t.Error("timers left running")
			}
		})
	}
}

func allow(f *Framework, plugin string) {
	f.WaitingPods().GetWaitingPod(testPod.UID).Allow(plugin)
}

func reject(f *Framework, plugin, msg string) {
	f.WaitingPods().GetWaitingPod(testPod.UID).Reject(plugin, msg)
}

func TestWaitOnPermitRealTimeout(t *testing.T) {
	f := newFramework(t, []framework.Plugin{permitPlugin{&fake{name: "A", permit: waitFor(20 * time.Millisecond)}}}, nil)
	start := time.Now()
	if s := f.RunPermitPlugins(context.Background(), newState(f), testPod, "n1"); !s.IsWait() {
		t.Fatal(s)
	}
	s := f.WaitOnPermit(context.Background(), testPod)
	if s.Code() != framework.Unschedulable || s.Message() != "rejected due to timeout after waiting 20ms at plugin A" {
		t.Errorf("WaitOnPermit = %v", s)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("returned after %v, before the timeout", d)
	}
}

func TestWaitOnPermitContextDone(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	f := newFramework(t, []framework.Plugin{permitPlugin{&fake{name: "A", permit: waitFor(time.Minute)}}}, nil, WithClock(clk))
	if s := f.RunPermitPlugins(context.Background(), newState(f), testPod, "n1"); !s.IsWait() {
		t.Fatal(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s := f.WaitOnPermit(ctx, testPod); s.Code() != framework.Error {
		t.Errorf("WaitOnPermit = %v, want Error", s)
	}
	if clk.HasWaiters() {
		t.Error("timer left running")
	}
	if f.WaitingPods().GetWaitingPod(testPod.UID) != nil {
		t.Error("pod still waiting")
	}
}

func TestWaitingPodsSharedBetweenProfiles(t *testing.T) {
	shared := NewWaitingPodsMap()
	f1 := newFramework(t, []framework.Plugin{permitPlugin{&fake{name: "A", permit: waitFor(time.Minute)}}}, nil, WithWaitingPods(shared))
	f2 := newFramework(t, nil, nil, WithWaitingPods(shared))
	if s := f1.RunPermitPlugins(context.Background(), newState(f1), testPod, "n1"); !s.IsWait() {
		t.Fatal(s)
	}
	var seen []string
	f2.WaitingPods().IterateOverWaitingPods(func(wp framework.WaitingPod) {
		seen = append(seen, wp.GetPod().Name)
		wp.Allow("A")
	})
	if diff := cmp.Diff([]string{"p"}, seen); diff != "" {
		t.Errorf("waiting pods seen from the other profile (-want +got):\n%s", diff)
	}
	if s := f1.WaitOnPermit(context.Background(), testPod); !s.IsSuccess() {
		t.Errorf("WaitOnPermit = %v", s)
	}
}

func TestRunPreBindPlugins(t *testing.T) {
	tests := []struct {
		name        string
		b           func() *framework.Status
		wantCode    framework.Code
		wantMessage string
		wantPlugin  string
		wantCalls   []string
	}{
		{name: "all succeed", wantCalls: []string{"A.PreBind", "B.PreBind", "C.PreBind"}},
		{
			name:      "Skip goes on",
			b:         func() *framework.Status { return framework.NewStatus(framework.Skip) },
			wantCalls: []string{"A.PreBind", "B.PreBind", "C.PreBind"},
		},
		{
			name: "a rejection stops",
			b: func() *framework.Status {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, "volume gone")
			},
			wantCode:    framework.UnschedulableAndUnresolvable,
			wantMessage: "volume gone",
			wantPlugin:  "B",
			wantCalls:   []string{"A.PreBind", "B.PreBind"},
		},
		{
			name:        "an error stops, wrapped",
			b:           func() *framework.Status { return framework.NewStatus(framework.Error, "api down") },
			wantCode:    framework.Error,
			wantMessage: `running PreBind plugin "B": api down`,
			wantCalls:   []string{"A.PreBind", "B.PreBind"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			f := newFrameworkOf(t, []framework.Plugin{
				pluginQS,
				bindPlugin{&fake{name: "A", log: log}},
				bindPlugin{&fake{name: "B", log: log, preBind: tt.b}},
				bindPlugin{&fake{name: "C", log: log}},
			}, nil)
			s := f.RunPreBindPlugins(context.Background(), newState(f), testPod, "n1")
			if s.Code() != tt.wantCode || s.Message() != tt.wantMessage || s.Plugin() != tt.wantPlugin {
				t.Errorf("status = %v (plugin %q), want %v: %q (plugin %q)", s, s.Plugin(), tt.wantCode, tt.wantMessage, tt.wantPlugin)
			}
			if diff := cmp.Diff(tt.wantCalls, log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunBindPlugins(t *testing.T) {
	skip := func() *framework.Status { return framework.NewStatus(framework.Skip) }
	tests := []struct {
		name        string
		binds       []func() *framework.Status // of B1, B2, B3
		wantCode    framework.Code
		wantMessage string
		wantPlugin  string
		wantCalls   []string
	}{
		{
			name:      "the first that does not Skip binds",
			binds:     []func() *framework.Status{skip, nil, nil},
			wantCalls: []string{"B1.Bind", "B2.Bind"},
		},
		{
			name:        "all Skip is an error",
			binds:       []func() *framework.Status{skip, skip, skip},
			wantCode:    framework.Error,
			wantMessage: "no bind plugin bound pod default/p: all 3 skipped",
			wantCalls:   []string{"B1.Bind", "B2.Bind", "B3.Bind"},
		},
		{
			name:        "an error stops, wrapped",
			binds:       []func() *framework.Status{skip, func() *framework.Status { return framework.NewStatus(framework.Error, "conflict") }, nil},
			wantCode:    framework.Error,
			wantMessage: `running Bind plugin "B2": conflict`,
			wantCalls:   []string{"B1.Bind", "B2.Bind"},
		},
		{
			name:        "a rejection stops, with the plugin",
			binds:       []func() *framework.Status{func() *framework.Status { return framework.NewStatus(framework.Unschedulable, "node gone") }, nil, nil},
			wantCode:    framework.Unschedulable,
			wantMessage: "node gone",
			wantPlugin:  "B1",
			wantCalls:   []string{"B1.Bind"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			f := newFrameworkOf(t, []framework.Plugin{
				pluginQS,
				bindPlugin{&fake{name: "B1", log: log, bind: tt.binds[0]}},
				bindPlugin{&fake{name: "B2", log: log, bind: tt.binds[1]}},
				bindPlugin{&fake{name: "B3", log: log, bind: tt.binds[2]}},
			}, nil)
			s := f.RunBindPlugins(context.Background(), newState(f), testPod, "n1")
			if s.Code() != tt.wantCode || s.Message() != tt.wantMessage || s.Plugin() != tt.wantPlugin {
				t.Errorf("status = %v (plugin %q), want %v: %q (plugin %q)", s, s.Plugin(), tt.wantCode, tt.wantMessage, tt.wantPlugin)
			}
			if diff := cmp.Diff(tt.wantCalls, log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunPostBindPlugins(t *testing.T) {
	log := &callLog{}
	f := newFrameworkOf(t, []framework.Plugin{pluginQS, bindPlugin{&fake{name: "A", log: log}}, bindPlugin{&fake{name: "B", log: log}}}, nil)
	f.RunPostBindPlugins(context.Background(), newState(f), testPod, "n1")
	if diff := cmp.Diff([]string{"A.PostBind", "B.PostBind"}, log.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
