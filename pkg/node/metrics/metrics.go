// Package metrics holds the node agent's own Prometheus metrics, under the kubelet's names
// (kubelet_pod_start_duration_seconds, kubelet_pleg_relist_duration_seconds, ...), served by
// the node API's /metrics beside the gauges read from the runtime at each scrape. Each node
// agent has its own set, so that many agents in one process (berth sim) do not mix; a nil
// *Metrics records nothing.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const subsystem = "kubelet"

// Metrics are one node agent's metrics.
type Metrics struct {
	PodStartDuration          prometheus.Histogram
	PodWorkerDuration         *prometheus.HistogramVec
	PLEGRelistDuration        prometheus.Histogram
	PLEGRelistInterval        prometheus.Histogram
	RuntimeOperations         *prometheus.CounterVec
	RuntimeOperationsDuration *prometheus.HistogramVec
	RuntimeOperationsErrors   *prometheus.CounterVec
	Evictions                 *prometheus.CounterVec
}

// New makes a node agent's metrics.
func New() *Metrics {
	return &Metrics{
		PodStartDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
			Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}),
		PodWorkerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation_type"}),
		PLEGRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pleg_relist_duration_seconds",
			Help: "Duration in seconds for relisting pods in PLEG.", Buckets: prometheus.DefBuckets,
		}),
		PLEGRelistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "pleg_relist_interval_seconds",
			Help: "Interval in seconds between relisting in PLEG.", Buckets: prometheus.DefBuckets,
		}),
		RuntimeOperations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		RuntimeOperationsDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		RuntimeOperationsErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "evictions",
			Help: "Cumulative number of pod evictions by eviction signal",
		}, []string{"eviction_signal"}),
	}
}

// Collectors are the metrics, to register with the node API's registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	return []prometheus.Collector{m.PodStartDuration, m.PodWorkerDuration, m.PLEGRelistDuration, m.PLEGRelistInterval,
		m.RuntimeOperations, m.RuntimeOperationsDuration, m.RuntimeOperationsErrors, m.Evictions}
}

// ObservePodStart records a pod's start: from when the node agent first saw it until now.
func (m *Metrics) ObservePodStart(firstSeen time.Time) {
	if m != nil && !firstSeen.IsZero() {
		m.PodStartDuration.Observe(time.Since(firstSeen).Seconds())
	}
}

// ObservePodWorker records one pod sync by operation ("create", "update", "sync", ...).
func (m *Metrics) ObservePodWorker(operation string, start time.Time) {
	if m != nil {
		m.PodWorkerDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	}
}

// ObserveRelist records a PLEG relist's duration and the interval since the previous one.
func (m *Metrics) ObserveRelist(start time.Time, previous *time.Time) {
	if m == nil {
		return
	}
	m.PLEGRelistDuration.Observe(time.Since(start).Seconds())
	if previous != nil && !previous.IsZero() {
		m.PLEGRelistInterval.Observe(start.Sub(*previous).Seconds())
	}
}

// ObserveRuntimeOperation records one CRI call.
func (m *Metrics) ObserveRuntimeOperation(operation string, start time.Time, err error) {
	if m == nil {
		return
	}
	m.RuntimeOperations.WithLabelValues(operation).Inc()
	m.RuntimeOperationsDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	if err != nil {
		m.RuntimeOperationsErrors.WithLabelValues(operation).Inc()
	}
}

// ObserveEviction counts an eviction by its signal.
func (m *Metrics) ObserveEviction(signal string) {
	if m != nil {
		m.Evictions.WithLabelValues(signal).Inc()
	}
}
