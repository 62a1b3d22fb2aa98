package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// The plugins of the configuration tests: F1..F3 are PreFilter+Filter, S1 and S2 are
// PreScore+Score, QS sorts, B binds (and PreBinds, PostBinds), FO is Filter only.
var (
	pluginQS = queueSortPlugin{&fake{name: "QS"}}
	pluginB  = bindPlugin{&fake{name: "B"}}
	pluginF1 = filterPlugin{&fake{name: "F1"}}
	pluginF2 = filterPlugin{&fake{name: "F2"}}
	pluginF3 = filterPlugin{&fake{name: "F3"}}
	pluginS1 = scorePlugin{&fake{name: "S1"}}
	pluginS2 = scorePlugin{&fake{name: "S2"}}
	pluginFO = filterOnly{&fake{name: "FO"}}
)

func weighted(name string, w int32) configv1.Plugin {
	return configv1.Plugin{Name: name, Weight: ptr.To(w)}
}

func TestNewFrameworkPlugins(t *testing.T) {
	tests := []struct {
		name    string
		plugins configv1.Plugins
		want    configv1.Plugins
		wantErr string
	}{
		{
			name:    "MultiPoint expands into every point a plugin implements",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: append(names("QS", "F1", "FO"), weighted("S1", 3), configv1.Plugin{Name: "B"})}},
			want: configv1.Plugins{
				QueueSort: configv1.PluginSet{Enabled: names("QS")},
				PreFilter: configv1.PluginSet{Enabled: names("F1")},
				Filter:    configv1.PluginSet{Enabled: names("F1", "FO")},
				PreScore:  configv1.PluginSet{Enabled: names("S1")},
				Score:     configv1.PluginSet{Enabled: []configv1.Plugin{weighted("S1", 3)}},
				PreBind:   configv1.PluginSet{Enabled: names("B")},
				Bind:      configv1.PluginSet{Enabled: names("B")},
				PostBind:  configv1.PluginSet{Enabled: names("B")},
			},
		},
		{
			name: "per-point sets without MultiPoint",
			plugins: configv1.Plugins{
				QueueSort: configv1.PluginSet{Enabled: names("QS")},
				Filter:    configv1.PluginSet{Enabled: names("F2", "F1")},
				Score:     configv1.PluginSet{Enabled: names("S2")},
				Bind:      configv1.PluginSet{Enabled: names("B")},
			},
			want: configv1.Plugins{
				QueueSort: configv1.PluginSet{Enabled: names("QS")},
				Filter:    configv1.PluginSet{Enabled: names("F2", "F1")},
				Score:     configv1.PluginSet{Enabled: []configv1.Plugin{weighted("S2", 1)}},
				Bind:      configv1.PluginSet{Enabled: names("B")},
			},
		},
		{
			name: "explicit entry overrides MultiPoint and comes first; other explicit ones come last",
			plugins: configv1.Plugins{
				MultiPoint: configv1.PluginSet{Enabled: names("QS", "F1", "F2", "B")},
				Filter:     configv1.PluginSet{Enabled: names("F3", "F2")},
			},
			want: configv1.Plugins{
				QueueSort: configv1.PluginSet{Enabled: names("QS")},
				PreFilter: configv1.PluginSet{Enabled: names("F1", "F2")},
				Filter:    configv1.PluginSet{Enabled: names("F2", "F1", "F3")},
				PreBind:   configv1.PluginSet{Enabled: names("B")},
				Bind:      configv1.PluginSet{Enabled: names("B")},
				PostBind:  configv1.PluginSet{Enabled: names("B")},
			},
		},
		{
			name: "disabled at one point only",
			plugins: configv1.Plugins{
				MultiPoint: configv1.PluginSet{Enabled: names("QS", "F1", "F2", "B")},
				Filter:     configv1.PluginSet{Disabled: names("F1")},
				PreBind:    configv1.PluginSet{Disabled: names("B")},
				PostBind:   configv1.PluginSet{Disabled: names("B")},
			},
			want: configv1.Plugins{
				QueueSort: configv1.PluginSet{Enabled: names("QS")},
				PreFilter: configv1.PluginSet{Enabled: names("F1", "F2")},
				Filter:    configv1.PluginSet{Enabled: names("F2")},
				Bind:      configv1.PluginSet{Enabled: names("B")},
			},
		},
		{
			name: `"*" disables MultiPoint at a point, explicit entries stay`,
			plugins: configv1.Plugins{
				MultiPoint: configv1.PluginSet{Enabled: names("QS", "F1", "F2", "B")},
				Filter:     configv1.PluginSet{Enabled: names("F3"), Disabled: names("*")},
			},
			want: configv1.Plugins{
				QueueSort: configv1.PluginSet{Enabled: names("QS")},
				PreFilter: configv1.PluginSet{Enabled: names("F1", "F2")},
				Filter:    configv1.PluginSet{Enabled: names("F3")},
				PreBind:   configv1.PluginSet{Enabled: names("B")},
				Bind:      configv1.PluginSet{Enabled: names("B")},
				PostBind:  configv1.PluginSet{Enabled: names("B")},
			},
		},
		{
			name: "Score weight wins over MultiPoint weight; unset and zero weights are 1",
			plugins: configv1.Plugins{
				MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: "QS"}, weighted("S1", 3), weighted("S2", 0), {Name: "B"}}},
				Score:      configv1.PluginSet{Enabled: []configv1.Plugin{weighted("S1", 5)}},
				PreScore:   configv1.PluginSet{Disabled: names("*")},
				PreBind:    configv1.PluginSet{Disabled: names("*")},
				PostBind:   configv1.PluginSet{Disabled: names("*")},
			},
			want: configv1.Plugins{
				QueueSort: configv1.PluginSet{Enabled: names("QS")},
				Score:     configv1.PluginSet{Enabled: []configv1.Plugin{weighted("S1", 5), weighted("S2", 1)}},
				Bind:      configv1.PluginSet{Enabled: names("B")},
			},
		},
		{
			name:    "explicit plugin not in the registry",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("QS", "B")}, Filter: configv1.PluginSet{Enabled: names("Nope")}},
			wantErr: `FilterPlugin "Nope" does not exist`,
		},
		{
			name:    "MultiPoint plugin not in the registry",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("QS", "B", "Nope")}},
			wantErr: `"Nope" does not exist`,
		},
		{
			name:    "explicit plugin that does not implement the point",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("QS", "B")}, Score: configv1.PluginSet{Enabled: names("F1")}},
			wantErr: `plugin "F1" does not extend ScorePlugin plugin`,
		},
		{
			name:    "plugin enabled twice at a point",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("QS", "B")}, Filter: configv1.PluginSet{Enabled: names("F1", "F1")}},
			wantErr: `plugin "F1" already registered as "FilterPlugin"`,
		},
		{
			name:    "plugin twice in MultiPoint",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("QS", "B", "F1", "F1")}},
			wantErr: `plugin "F1" already registered as "PreFilterPlugin"`,
		},
		{
			name:    "no QueueSort plugin",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("B")}},
			wantErr: `only one queue sort plugin required for profile with scheduler name "test", but got 0`,
		},
		{
			name: "two QueueSort plugins",
			plugins: configv1.Plugins{
				MultiPoint: configv1.PluginSet{Enabled: names("QS", "B")},
				QueueSort:  configv1.PluginSet{Enabled: names("QS2")},
			},
			wantErr: `but got 2`,
		},
		{
			name:    "no Bind plugin",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("QS", "F1")}},
			wantErr: `at least one bind plugin is needed for profile with scheduler name "test"`,
		},
		{
			name:    "negative score weight",
			plugins: configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{{Name: "QS"}, {Name: "B"}, weighted("S1", -1)}}},
			wantErr: `score plugins: score plugin "S1" has a negative weight -1`,
		},
	}
	registry := registryOf(pluginQS, pluginB, pluginF1, pluginF2, pluginF3, pluginS1, pluginS2, pluginFO, queueSortPlugin{&fake{name: "QS2"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile := &configv1.KubeSchedulerProfile{SchedulerName: ptr.To("test"), Plugins: &tt.plugins}
			f, err := NewFramework(context.Background(), registry, profile, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.want, f.ListPlugins()); diff != "" {
				t.Errorf("ListPlugins() (-want +got):\n%s", diff)
			}
			if f.ProfileName() != "test" {
				t.Errorf("ProfileName() = %q", f.ProfileName())
			}
		})
	}
}

func TestNewFrameworkBuildsEachPluginOnceWithItsArgs(t *testing.T) {
	built := map[string]int{}
	gotArgs := map[string]runtime.Object{}
	var gotHandle framework.Handle
	factory := func(p framework.Plugin) framework.PluginFactory {
		return func(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
			built[p.Name()]++
			gotArgs[p.Name()] = args
			gotHandle = h
			return p, nil
		}
	}
	registry := framework.Registry{"QS": factory(pluginQS), "B": factory(pluginB), "F1": factory(pluginF1), "S1": factory(pluginS1), "Unused": factory(pluginF3)}
	args := &configv1.NodeResourcesFitArgs{}
	profile := &configv1.KubeSchedulerProfile{Plugins: &configv1.Plugins{
		MultiPoint: configv1.PluginSet{Enabled: names("QS", "B", "F1", "S1")},
		Filter:     configv1.PluginSet{Enabled: names("F1")},
	}}
	f, err := NewFramework(context.Background(), registry, profile, map[string]runtime.Object{"F1": args})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"QS": 1, "B": 1, "F1": 1, "S1": 1}, built); diff != "" {
		t.Errorf("plugins built (-want +got):\n%s", diff)
	}
	if gotArgs["F1"] != args || gotArgs["S1"] != nil {
		t.Errorf("args = %v, want F1's args for F1 and nil for the others", gotArgs)
	}
	if gotHandle != f {
		t.Error("plugins did not get the Framework as their Handle")
	}
	if f.ProfileName() != "default-scheduler" {
		t.Errorf("ProfileName() = %q, want default-scheduler for an unnamed profile", f.ProfileName())
	}
	if f.PluginsRunner() != f {
		t.Error("PluginsRunner() is not the Framework")
	}
}

func TestNewFrameworkFactoryError(t *testing.T) {
	registry := registryOf(pluginQS, pluginB)
	registry["Bad"] = func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
		return nil, errors.New("bad args")
	}
	profile := &configv1.KubeSchedulerProfile{Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: names("QS", "B", "Bad")}}}
	_, err := NewFramework(context.Background(), registry, profile, nil)
	if err == nil || err.Error() != `initializing plugin "Bad": bad args` {
		t.Errorf("err = %v", err)
	}
}

func TestEnqueueExtensions(t *testing.T) {
	ev := eventsFilter{filterOnly{&fake{name: "EV"}}}
	f := newFramework(t, []framework.Plugin{pluginFO, ev, pluginS1}, nil)
	got := map[string][]framework.ClusterEventWithHint{}
	for _, e := range f.EnqueueExtensions() {
		events, err := e.EventsToRegister(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = events
	}
	// Score-only and bind-only plugins never reject a pod, so they register nothing; a
	// Filter plugin that says nothing gets every event.
	if _, ok := got["S1"]; ok {
		t.Error("score plugin has EnqueueExtensions")
	}
	if _, ok := got["Binder"]; ok {
		t.Error("bind plugin has EnqueueExtensions")
	}
	all := framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All}
	if len(got["FO"]) != 1 || got["FO"][0].Event != all {
		t.Errorf("FO registered %v, want every event", got["FO"])
	}
	if len(got["EV"]) != 1 || got["EV"][0].Event.Resource != framework.Node {
		t.Errorf("EV registered %v, want its own events", got["EV"])
	}
}

func TestQueueSortFuncAndHas(t *testing.T) {
	f := newFramework(t, []framework.Plugin{pluginFO}, nil)
	if !f.HasFilterPlugins() || f.HasScorePlugins() || f.HasPostFilterPlugins() {
		t.Errorf("Has: filter %v score %v postFilter %v", f.HasFilterPlugins(), f.HasScorePlugins(), f.HasPostFilterPlugins())
	}
	less := f.QueueSortFunc()
	a := &framework.QueuedPodInfo{}
	b := &framework.QueuedPodInfo{Timestamp: a.Timestamp.Add(1)}
	if !less(a, b) || less(b, a) {
		t.Error("QueueSortFunc is not the QueueSort plugin's Less")
	}
}
