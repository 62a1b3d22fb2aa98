package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// unreservePanics panics in Unreserve and PostBind, which return nothing.
type unreservePanics struct{ *fake }

func (p unreservePanics) Reserve(context.Context, *framework.CycleState, *v1.Pod, string) *framework.Status {
	return nil
}
func (p unreservePanics) Unreserve(context.Context, *framework.CycleState, *v1.Pod, string) {
	panic("boom")
}
func (p unreservePanics) PostBind(context.Context, *framework.CycleState, *v1.Pod, string) {
	panic("boom")
}

func TestAPanicInAPluginIsAnErrorStatusNamingIt(t *testing.T) {
	boom := func() *framework.Status { panic("boom") }
	nodes := makeNodes("n1", "n2", "n3")
	tests := []struct {
		name   string
		plugin framework.Plugin
		run    func(f *Framework, state *framework.CycleState) *framework.Status
	}{
		{"PreFilter", filterPlugin{&fake{name: "P", preFilter: func(*v1.Pod, []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
			return nil, boom()
		}}}, func(f *Framework, state *framework.CycleState) *framework.Status {
			_, s, _ := f.RunPreFilterPlugins(context.Background(), state, testPod)
			return s
		}},
		{"Filter", filterPlugin{&fake{name: "P", filter: func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status { return boom() }}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				return f.RunFilterPlugins(context.Background(), state, testPod, nodes[0])
			}},
		{"AddPod", filterPlugin{&fake{name: "P", addPod: func(*framework.CycleState, *framework.PodInfo, *framework.NodeInfo) *framework.Status { return boom() }}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				return f.RunPreFilterExtensionAddPod(context.Background(), state, testPod, framework.NewPodInfo(testPod), nodes[0])
			}},
		{"PostFilter", postFilterPlugin{&fake{name: "P", post: func() (*framework.PostFilterResult, *framework.Status) { return nil, boom() }}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				_, s := f.RunPostFilterPlugins(context.Background(), state, testPod, NewDefaultNodeToStatus())
				return s
			}},
		{"PreScore", scorePlugin{&fake{name: "P", preScore: boom}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				return f.RunPreScorePlugins(context.Background(), state, testPod, nodes)
			}},
		{"Score", scorePlugin{&fake{name: "P", score: func(ni *framework.NodeInfo) (int64, *framework.Status) {
			if ni.Node().Name == "n2" {
				panic("boom")
			}
			return 1, nil
		}}}, func(f *Framework, state *framework.CycleState) *framework.Status {
			_, s := f.RunScorePlugins(context.Background(), state, testPod, nodes)
			return s
		}},
		{"NormalizeScore", scorePlugin{&fake{name: "P", normalize: func(framework.NodeScoreList) *framework.Status { return boom() }}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				_, s := f.RunScorePlugins(context.Background(), state, testPod, nodes)
				return s
			}},
		{"Reserve", reservePlugin{&fake{name: "P", reserve: boom}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				return f.RunReservePluginsReserve(context.Background(), state, testPod, "n1")
			}},
		{"Permit", permitPlugin{&fake{name: "P", permit: func() (*framework.Status, time.Duration) { return boom(), 0 }}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				return f.RunPermitPlugins(context.Background(), state, testPod, "n1")
			}},
		{"PreBind", bindPlugin{&fake{name: "P", preBind: boom}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				return f.RunPreBindPlugins(context.Background(), state, testPod, "n1")
			}},
		{"Bind", bindPlugin{&fake{name: "P", bind: boom}},
			func(f *Framework, state *framework.CycleState) *framework.Status {
				return f.RunBindPlugins(context.Background(), state, testPod, "n1")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// P comes before the basics' binder, so that P's Bind is the one asked.
			f := newFrameworkOf(t, append([]framework.Plugin{tt.plugin}, basics...), nil, WithSnapshotSharedLister(lister(nodes)))
			before := testutil.ToFloat64(panics.Recovered.WithLabelValues(PanicComponent))
			s := tt.run(f, newState(f))
			if s.Code() != framework.Error || !strings.Contains(s.Message(), "panic in plugin P: boom") {
				t.Errorf("status = %v, want an Error with %q", s, "panic in plugin P: boom")
			}
			var pe *framework.PluginPanicError
			if !errors.As(s.AsError(), &pe) || pe.Plugin != "P" {
				t.Errorf("the status's error %v is not a PluginPanicError of P", s.AsError())
			}
			if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(PanicComponent)); got != before+1 {
				t.Errorf("berth_recovered_panics_total{component=scheduler} = %v, want %v", got, before+1)
			}
		})
	}
}

// A PreScore plugin's own parallel work panics on a worker goroutine: the parallelizer raises
// it again in the caller, where the runtime recovers it.
func TestAPanicOnAPluginsParallelWorkerIsRecoveredInTheCaller(t *testing.T) {
	nodes := makeNodes("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8")
	var f *Framework
	f = newFramework(t, []framework.Plugin{scorePlugin{&fake{name: "P", preScore: func() *framework.Status {
		f.Parallelizer().Until(context.Background(), 1000, func(i int) {
			if i == 999 {
				panic("boom")
			}
		}, "test")
		return nil
	}}}}, nil)
	s := f.RunPreScorePlugins(context.Background(), newState(f), testPod, nodes)
	if s.Code() != framework.Error || !strings.Contains(s.Message(), "panic in plugin P: boom") {
		t.Errorf("status = %v, want an Error with %q", s, "panic in plugin P: boom")
	}
}

// Unreserve and PostBind return nothing: a panic is logged and counted, and the other plugins
// still run.
func TestAPanicInUnreserveOrPostBindLetsTheOthersRun(t *testing.T) {
	log := &callLog{}
	f := newFramework(t, []framework.Plugin{
		reservePlugin{&fake{name: "A", log: log}},
		unreservePanics{&fake{name: "P"}},
		bindPlugin{&fake{name: "B", log: log}},
	}, nil)
	state := newState(f)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(PanicComponent))
	f.RunReservePluginsUnreserve(context.Background(), state, testPod, "n1")
	f.RunPostBindPlugins(context.Background(), state, testPod, "n1")
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(PanicComponent)); got != before+2 {
		t.Errorf("berth_recovered_panics_total{component=scheduler} = %v, want %v", got, before+2)
	}
	calls := strings.Join(log.get(), " ")
	if !strings.Contains(calls, "A.Unreserve") || !strings.Contains(calls, "B.PostBind") {
		t.Errorf("calls = %q, want A.Unreserve and B.PostBind despite P's panics", calls)
	}
}
