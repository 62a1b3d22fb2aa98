package runtime

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
)

func sampleCount(t *testing.T, vec *prometheus.HistogramVec, labels ...string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(labels...).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func TestMetricsRecorded(t *testing.T) {
	reject := func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
		return framework.NewStatus(framework.Unschedulable, "no")
	}
	// Plugin names unique to this test, so that other tests' observations do not count.
	f := newFramework(t, []framework.Plugin{
		filterPlugin{&fake{name: "MetricsFilter", filter: reject}},
		scorePlugin{&fake{name: "MetricsScore"}},
	}, nil, WithSnapshotSharedLister(lister(makeNodes("n1"))))
	f.profileName = "metrics-test"
	ctx := context.Background()
	node := makeNodes("n1")[0]

	for _, record := range []bool{true, false} {
		state := framework.NewCycleState()
		f.SetRecordPluginMetrics(state, record)
		prefilter := sampleCount(t, metrics.FrameworkExtensionPointDuration, metrics.PreFilter, "Success", "metrics-test")
		score := sampleCount(t, metrics.FrameworkExtensionPointDuration, metrics.Score, "Success", "metrics-test")
		filterPlugin := sampleCount(t, metrics.PluginExecutionDuration, "MetricsFilter", metrics.Filter, "Unschedulable")
		scorePlugin := sampleCount(t, metrics.PluginExecutionDuration, "MetricsScore", metrics.Score, "Success")

		if _, s, _ := f.RunPreFilterPlugins(ctx, state, testPod); !s.IsSuccess() {
			t.Fatal(s)
		}
		for range 3 {
			if s := f.RunFilterPlugins(ctx, state, testPod, node); s.IsSuccess() {
				t.Fatal("filter passed")
			}
		}
		if _, s := f.RunScorePlugins(ctx, state, testPod, []*framework.NodeInfo{node}); !s.IsSuccess() {
			t.Fatal(s)
		}

		// The extension points are always recorded, once per call.
		if got := sampleCount(t, metrics.FrameworkExtensionPointDuration, metrics.PreFilter, "Success", "metrics-test") - prefilter; got != 1 {
			t.Errorf("record=%v: %d PreFilter extension point observations, want 1", record, got)
		}
		if got := sampleCount(t, metrics.FrameworkExtensionPointDuration, metrics.Score, "Success", "metrics-test") - score; got != 1 {
			t.Errorf("record=%v: %d Score extension point observations, want 1", record, got)
		}
		// The plugins only in sampled cycles.
		want := map[bool]uint64{true: 3, false: 0}[record]
		if got := sampleCount(t, metrics.PluginExecutionDuration, "MetricsFilter", metrics.Filter, "Unschedulable") - filterPlugin; got != want {
			t.Errorf("record=%v: %d Filter plugin observations, want %d", record, got, want)
		}
		want = map[bool]uint64{true: 1, false: 0}[record]
		if got := sampleCount(t, metrics.PluginExecutionDuration, "MetricsScore", metrics.Score, "Success") - scorePlugin; got != want {
			t.Errorf("record=%v: %d Score plugin observations, want %d", record, got, want)
		}
	}
}

func TestPluginMetricsSampling(t *testing.T) {
	f := newFramework(t, nil, nil, WithSnapshotSharedLister(lister(nil)))
	sampled := 0
	const cycles = 2000
	for range cycles {
		state := framework.NewCycleState()
		f.RunPreFilterPlugins(context.Background(), state, testPod)
		if f.shouldRecord(state) {
			sampled++
		}
	}
	// 10% of 2000 is 200, with a standard deviation of ~13.
	if sampled < 120 || sampled > 280 {
		t.Errorf("%d of %d cycles sampled, want about 10%%", sampled, cycles)
	}

	// A decision made before PreFilter stands, and a cloned state keeps it.
	state := framework.NewCycleState()
	f.SetRecordPluginMetrics(state, true)
	for range 20 {
		f.RunPreFilterPlugins(context.Background(), state, testPod)
	}
	if !f.shouldRecord(state) || !f.shouldRecord(state.Clone()) {
		t.Error("PreFilter overrode the sampling decision, or Clone lost it")
	}
}
