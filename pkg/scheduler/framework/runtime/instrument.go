package runtime

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
)

// pluginMetricsSamplePercent is the share of scheduling cycles whose per-plugin durations are
// recorded, as in kube-scheduler: timing every Filter call on every node would cost more than
// it tells.
const pluginMetricsSamplePercent = 10

// recordPluginMetricsKey holds, in a cycle's state, whether the cycle is sampled.
const recordPluginMetricsKey framework.StateKey = "berth.io/record-plugin-metrics"

type recordPluginMetrics bool

func (r recordPluginMetrics) Clone() framework.StateData { return r }

// samplingMemo remembers the sampling decision of the last cycle state seen, so that the
// per-node calls (Filter on 5000 nodes) do not each take the CycleState's lock to read it.
type samplingMemo struct {
	last atomic.Pointer[sampledState]
}

type sampledState struct {
	state  *framework.CycleState
	record bool
}

// SetRecordPluginMetrics decides whether the cycle that uses state records per-plugin
// durations. RunPreFilterPlugins decides by itself (pluginMetricsSamplePercent of cycles)
// when nothing was decided before.
func (f *Framework) SetRecordPluginMetrics(state *framework.CycleState, record bool) {
	state.Write(recordPluginMetricsKey, recordPluginMetrics(record))
	f.sampling.last.Store(&sampledState{state: state, record: record})
}

// sampleCycle decides, once per cycle, whether it is sampled.
func (f *Framework) sampleCycle(state *framework.CycleState) {
	if _, err := state.Read(recordPluginMetricsKey); err != nil {
		f.SetRecordPluginMetrics(state, rand.IntN(100) < pluginMetricsSamplePercent)
	}
}

// shouldRecord reports whether the cycle of state is sampled.
func (f *Framework) shouldRecord(state *framework.CycleState) bool {
	if m := f.sampling.last.Load(); m != nil && m.state == state {
		return m.record
	}
	d, err := state.Read(recordPluginMetricsKey)
	if err != nil {
		return false
	}
	record := bool(d.(recordPluginMetrics))
	f.sampling.last.Store(&sampledState{state: state, record: record})
	return record
}

type pluginMetricKey struct {
	plugin, point string
	code          framework.Code
}

// pluginObservers caches the histogram children of plugin_execution_duration_seconds:
// looking one up by its labels takes the vector's lock, which the parallel Filter calls would
// fight over.
var pluginObservers sync.Map // pluginMetricKey → prometheus.Observer

// observePlugin records one plugin call that started at start.
func observePlugin(plugin, point string, code framework.Code, start time.Time) {
	d := time.Since(start).Seconds()
	k := pluginMetricKey{plugin: plugin, point: point, code: code}
	o, ok := pluginObservers.Load(k)
	if !ok {
		o, _ = pluginObservers.LoadOrStore(k, metrics.PluginExecutionDuration.WithLabelValues(plugin, point, code.String()))
	}
	o.(prometheus.Observer).Observe(d)
}

// observePoint records one run of all plugins of an extension point.
func (f *Framework) observePoint(point string, status *framework.Status, start time.Time) {
	metrics.FrameworkExtensionPointDuration.WithLabelValues(point, status.Code().String(), f.profileName).Observe(metrics.SinceInSeconds(start))
}
