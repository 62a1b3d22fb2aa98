package metrics

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestRegisterIsIdempotent(t *testing.T) {
	r := prometheus.NewRegistry()
	Register(r)
	Register(r) // must not panic

	// Every metric shows up once something is recorded in it.
	PodScheduled("reg-test", 0.01)
	PodSchedulingAttempts.Observe(1)
	PodSchedulingSLIDuration.WithLabelValues(AttemptsLabel(1)).Observe(0.5)
	ActivePods().Set(1)
	SchedulerQueueIncomingPods.WithLabelValues(ActiveQueue, "PodAdd").Inc()
	FrameworkExtensionPointDuration.WithLabelValues(Filter, "Success", "reg-test").Observe(0.001)
	PluginExecutionDuration.WithLabelValues("P", Filter, "Success").Observe(0.0001)
	PermitWaitDuration.WithLabelValues("Success").Observe(0.001)
	PreemptionAttempts.Inc()
	PreemptionVictims.Observe(2)
	UnschedulableReason("P", "reg-test").Inc()
	Goroutines.WithLabelValues(Binding).Set(0)
	SchedulingAlgorithmLatency.Observe(0.002)
	CacheSize.WithLabelValues(CacheNodes).Set(3)

	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{
		"scheduler_schedule_attempts_total",
		"scheduler_scheduling_attempt_duration_seconds",
		"scheduler_pod_scheduling_sli_duration_seconds",
		"scheduler_pod_scheduling_attempts",
		"scheduler_pending_pods",
		"scheduler_framework_extension_point_duration_seconds",
		"scheduler_plugin_execution_duration_seconds",
		"scheduler_permit_wait_duration_seconds",
		"scheduler_queue_incoming_pods_total",
		"scheduler_preemption_attempts_total",
		"scheduler_preemption_victims",
		"scheduler_unschedulable_pods",
		"scheduler_goroutines",
		"scheduler_scheduling_algorithm_duration_seconds",
		"scheduler_cache_size",
	} {
		if !got[name] {
			t.Errorf("metric %s not gathered", name)
		}
	}
}

func TestRegisterPanicsOnConflict(t *testing.T) {
	r := prometheus.NewRegistry()
	r.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "scheduler_preemption_attempts_total", Help: "other"}))
	defer func() {
		if recover() == nil {
			t.Error("Register did not panic on a conflicting metric")
		}
	}()
	Register(r)
}

func TestScheduleAttemptHelpers(t *testing.T) {
	const profile = "helpers-test"
	for _, result := range []string{ScheduledResult, UnschedulableResult, ErrorResult} {
		ScheduleAttempts.DeleteLabelValues(result, profile) // start from zero under -count
		SchedulingLatency.DeleteLabelValues(result, profile)
	}
	PodScheduled(profile, 0.003)
	PodUnschedulable(profile, 0.003)
	PodUnschedulable(profile, 0.003)
	PodScheduleError(profile, 0.003)
	for result, want := range map[string]float64{ScheduledResult: 1, UnschedulableResult: 2, ErrorResult: 1} {
		if got := testutil.ToFloat64(ScheduleAttempts.WithLabelValues(result, profile)); got != want {
			t.Errorf("schedule_attempts_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	for result, want := range map[string]uint64{ScheduledResult: 1, UnschedulableResult: 2, ErrorResult: 1} {
		h := histogramOf(t, SchedulingLatency.WithLabelValues(result, profile).(prometheus.Histogram))
		if h.GetSampleCount() != want || math.Abs(h.GetSampleSum()-0.003*float64(want)) > 1e-9 {
			t.Errorf("scheduling_attempt_duration_seconds{result=%q}: count %d sum %v, want %d observations of 0.003",
				result, h.GetSampleCount(), h.GetSampleSum(), want)
		}
	}
}

func TestAttemptsLabel(t *testing.T) {
	for attempts, want := range map[int]string{1: "1", 14: "14", 15: "15+", 40: "15+"} {
		if got := AttemptsLabel(attempts); got != want {
			t.Errorf("AttemptsLabel(%d) = %q, want %q", attempts, got, want)
		}
	}
}

func TestBucketsMatchKubeScheduler(t *testing.T) {
	tests := []struct {
		name     string
		h        prometheus.Collector
		first    float64
		last     float64
		nBuckets int
	}{
		{"framework_extension_point_duration_seconds", FrameworkExtensionPointDuration, 0.0001, 0.2048, 12},
		{"pod_scheduling_attempts", PodSchedulingAttempts, 1, 16, 5},
		{"preemption_victims", PreemptionVictims, 1, 64, 7},
		{"pod_scheduling_sli_duration_seconds", PodSchedulingSLIDuration, 0.01, 5242.88, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch h := tt.h.(type) {
			case *prometheus.HistogramVec:
				obs := h.WithLabelValues(bucketLabels(tt.name)...)
				checkBuckets(t, obs.(prometheus.Histogram), tt.first, tt.last, tt.nBuckets)
			case prometheus.Histogram:
				checkBuckets(t, h, tt.first, tt.last, tt.nBuckets)
			}
		})
	}
}

func histogramOf(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

func bucketLabels(name string) []string {
	if name == "pod_scheduling_sli_duration_seconds" {
		return []string{"bucket-test"}
	}
	return []string{"bucket-test", "Success", "bucket-test"}
}

func checkBuckets(t *testing.T, h prometheus.Histogram, first, last float64, n int) {
	t.Helper()
	b := histogramOf(t, h).GetBucket()
	if len(b) != n {
		t.Fatalf("%d buckets, want %d", len(b), n)
	}
	if got := b[0].GetUpperBound(); got != first {
		t.Errorf("first bucket %v, want %v", got, first)
	}
	if got := b[n-1].GetUpperBound(); got < last*0.999 || got > last*1.001 {
		t.Errorf("last bucket %v, want %v", got, last)
	}
}
