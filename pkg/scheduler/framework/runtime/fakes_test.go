package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// callLog records plugin calls, in order, across goroutines.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// fake holds a plugin's name and behaviour; the types below embed it to implement the
// extension points they stand for. A nil behaviour means Success.
type fake struct {
	name string
	log  *callLog

	preFilter func(pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status)
	addPod    func(state *framework.CycleState, added *framework.PodInfo, ni *framework.NodeInfo) *framework.Status
	filter    func(state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status
	post      func() (*framework.PostFilterResult, *framework.Status)
	preScore  func() *framework.Status
	score     func(ni *framework.NodeInfo) (int64, *framework.Status)
	normalize func(scores framework.NodeScoreList) *framework.Status
	reserve   func() *framework.Status
	permit    func() (*framework.Status, time.Duration)
	preBind   func() *framework.Status
	bind      func() *framework.Status
}

func (f *fake) Name() string { return f.name }

// note logs a call of the plugin at point.
func (f *fake) note(point string) {
	if f.log != nil {
		f.log.add(f.name + "." + point)
	}
}

type queueSortPlugin struct{ *fake }

func (queueSortPlugin) Less(a, b *framework.QueuedPodInfo) bool {
	return a.Timestamp.Before(b.Timestamp)
}

// filterPlugin is PreFilter (with extensions) and Filter.
type filterPlugin struct{ *fake }

func (p filterPlugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	p.note("PreFilter")
	if p.preFilter == nil {
		return nil, nil
	}
	return p.preFilter(pod, nodes)
}

func (p filterPlugin) PreFilterExtensions() framework.PreFilterExtensions { return p }

func (p filterPlugin) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, added *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	p.note("AddPod")
	if p.addPod == nil {
		return nil
	}
	return p.addPod(state, added, ni)
}

func (p filterPlugin) RemovePod(context.Context, *framework.CycleState, *v1.Pod, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	p.note("RemovePod")
	return nil
}

func (p filterPlugin) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	p.note("Filter")
	if p.filter == nil {
		return nil
	}
	return p.filter(state, pod, ni)
}

// filterOnly implements Filter alone (no EnqueueExtensions either).
type filterOnly struct{ *fake }

func (p filterOnly) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	p.note("Filter")
	if p.filter == nil {
		return nil
	}
	return p.filter(state, pod, ni)
}

// eventsFilter is a Filter plugin that says which events matter to it.
type eventsFilter struct{ filterOnly }

func (eventsFilter) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}}}, nil
}

type postFilterPlugin struct{ *fake }

func (p postFilterPlugin) PostFilter(context.Context, *framework.CycleState, *v1.Pod, framework.NodeToStatusReader) (*framework.PostFilterResult, *framework.Status) {
	p.note("PostFilter")
	if p.post == nil {
		return nil, nil
	}
	return p.post()
}

// scorePlugin is PreScore and Score, with NormalizeScore when normalize is set.
type scorePlugin struct{ *fake }

func (p scorePlugin) PreScore(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) *framework.Status {
	p.note("PreScore")
	if p.preScore == nil {
		return nil
	}
	return p.preScore()
}

func (p scorePlugin) Score(_ context.Context, _ *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	if p.score == nil {
		return 0, nil
	}
	return p.score(ni)
}

func (p scorePlugin) ScoreExtensions() framework.ScoreExtensions {
	if p.normalize == nil {
		return nil
	}
	return p
}

func (p scorePlugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return p.normalize(scores)
}

type reservePlugin struct{ *fake }

func (p reservePlugin) Reserve(context.Context, *framework.CycleState, *v1.Pod, string) *framework.Status {
	p.note("Reserve")
	if p.reserve == nil {
		return nil
	}
	return p.reserve()
}

func (p reservePlugin) Unreserve(context.Context, *framework.CycleState, *v1.Pod, string) {
	p.note("Unreserve")
}

type permitPlugin struct{ *fake }

func (p permitPlugin) Permit(context.Context, *framework.CycleState, *v1.Pod, string) (*framework.Status, time.Duration) {
	p.note("Permit")
	if p.permit == nil {
		return nil, 0
	}
	return p.permit()
}

// bindPlugin is PreBind, Bind and PostBind.
type bindPlugin struct{ *fake }

func (p bindPlugin) PreBind(context.Context, *framework.CycleState, *v1.Pod, string) *framework.Status {
	p.note("PreBind")
	if p.preBind == nil {
		return nil
	}
	return p.preBind()
}

func (p bindPlugin) Bind(context.Context, *framework.CycleState, *v1.Pod, string) *framework.Status {
	p.note("Bind")
	if p.bind == nil {
		return nil
	}
	return p.bind()
}

func (p bindPlugin) PostBind(context.Context, *framework.CycleState, *v1.Pod, string) {
	p.note("PostBind")
}

// lister is a snapshot over a fixed list of nodes.
type lister []*framework.NodeInfo

func (l lister) NodeInfos() framework.NodeInfoLister  { return l }
func (l lister) List() ([]*framework.NodeInfo, error) { return l, nil }
func (l lister) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	return nil, nil
}
func (l lister) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return nil, nil
}
func (l lister) Get(name string) (*framework.NodeInfo, error) {
	for _, n := range l {
		if n.Node().Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("node %q not found", name)
}

// makeNodes returns NodeInfos for nodes named names, each with the given pods.
func makeNodes(names ...string) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, len(names))
	for i, n := range names {
		ni := framework.NewNodeInfo()
		ni.SetNode(st.MakeNode().Name(n).Obj())
		out[i] = ni
	}
	return out
}

// nominator nominates fixed pods to nodes.
type nominator map[string][]*framework.PodInfo

func (n nominator) AddNominatedPod(*framework.PodInfo, *framework.NominatingInfo) {}
func (n nominator) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (n nominator) UpdateNominatedPod(*v1.Pod, *framework.PodInfo)                {}
func (n nominator) NominatedPodsForNode(node string) []*framework.PodInfo         { return n[node] }

// registryOf returns a registry that hands out the given plugin instances by name.
func registryOf(plugins ...framework.Plugin) framework.Registry {
	r := framework.Registry{}
	for _, p := range plugins {
		r[p.Name()] = func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) { return p, nil }
	}
	return r
}

func names(ns ...string) []configv1.Plugin {
	out := make([]configv1.Plugin, len(ns))
	for i, n := range ns {
		out[i] = configv1.Plugin{Name: n}
	}
	return out
}

// basics are the plugins every profile needs.
var basics = []framework.Plugin{queueSortPlugin{&fake{name: "QS"}}, bindPlugin{&fake{name: "Binder"}}}

// newFramework builds a profile "test" of the given plugins (besides basics), all enabled
// through MultiPoint in the order given, with score weights from weights.
func newFramework(t testing.TB, plugins []framework.Plugin, weights map[string]int32, opts ...Option) *Framework {
	t.Helper()
	return newFrameworkOf(t, append(append([]framework.Plugin(nil), basics...), plugins...), weights, opts...)
}

// newFrameworkOf is newFramework without the basics.
func newFrameworkOf(t testing.TB, all []framework.Plugin, weights map[string]int32, opts ...Option) *Framework {
	t.Helper()
	var mp []configv1.Plugin
	for _, p := range all {
		e := configv1.Plugin{Name: p.Name()}
		if w, ok := weights[p.Name()]; ok {
			e.Weight = ptr.To(w)
		}
		mp = append(mp, e)
	}
	profile := &configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To("test"),
		Plugins:       &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: mp}},
	}
	f, err := NewFramework(context.Background(), registryOf(all...), profile, nil, opts...)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	return f
}

func newState(f *Framework) *framework.CycleState {
	s := framework.NewCycleState()
	f.SetRecordPluginMetrics(s, false)
	return s
}
