package proxy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
)

const subsystem = "kubeproxy"

// Metrics are one proxy's metrics, under kube-proxy's names, labelled by ip_family. Each
// Proxier has its own set (Collectors), for the node API's registry to serve; a nil
// *Metrics records nothing.
type Metrics struct {
	SyncDuration        *prometheus.HistogramVec
	SyncFullDuration    *prometheus.HistogramVec
	SyncPartialDuration *prometheus.HistogramVec
	LastSync            *prometheus.GaugeVec
	SyncFailures        *prometheus.CounterVec
	ConntrackDeleted    *prometheus.CounterVec
	// SkippedObjects counts the Services and EndpointSlices, by kind, that the proxy could
	// not program in full (berth's own).
	SkippedObjects *prometheus.CounterVec
}

// newMetrics makes a proxy's metrics.
func newMetrics() *Metrics {
	buckets := prometheus.ExponentialBuckets(0.001, 2, 15)
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}, []string{"ip_family"})
	}
	return &Metrics{
		SyncDuration:        histogram("sync_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds"),
		SyncFullDuration:    histogram("sync_full_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds for full resyncs"),
		SyncPartialDuration: histogram("sync_partial_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds for partial resyncs"),
		LastSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced"}, []string{"ip_family"}),
		SyncFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: "sync_proxy_rules_nftables_sync_failures_total",
			Help: "Cumulative proxy nftables sync failures"}, []string{"ip_family"}),
		ConntrackDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: "conntrack_reconciler_deleted_entries_total",
			Help: "Cumulative conntrack flows deleted by conntrack reconciler"}, []string{"ip_family"}),
		SkippedObjects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_proxy_skipped_objects_total",
			Help: "Services and EndpointSlices, by kind, that the service proxy could not program in full"}, []string{"kind"}),
	}
}

// Collectors are the metrics, to register with a registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	if m == nil {
		return nil
	}
	return []prometheus.Collector{m.SyncDuration, m.SyncFullDuration, m.SyncPartialDuration, m.LastSync, m.SyncFailures,
		m.ConntrackDeleted, m.SkippedObjects}
}

func (m *Metrics) observeSync(family v1.IPFamily, full bool, d time.Duration, ok bool, conntrackDeleted int) {
	if m == nil {
		return
	}
	f := string(family)
	m.SyncDuration.WithLabelValues(f).Observe(d.Seconds())
	if full {
		m.SyncFullDuration.WithLabelValues(f).Observe(d.Seconds())
	} else {
		m.SyncPartialDuration.WithLabelValues(f).Observe(d.Seconds())
	}
	if !ok {
		m.syncFailed(family)
		return
	}
	m.LastSync.WithLabelValues(f).SetToCurrentTime()
	if conntrackDeleted > 0 {
		m.ConntrackDeleted.WithLabelValues(f).Add(float64(conntrackDeleted))
	}
}

func (m *Metrics) syncFailed(family v1.IPFamily) {
	if m != nil {
		m.SyncFailures.WithLabelValues(string(family)).Inc()
	}
}

func (m *Metrics) skipped(kind string) {
	if m != nil {
		m.SkippedObjects.WithLabelValues(kind).Inc()
	}
}
