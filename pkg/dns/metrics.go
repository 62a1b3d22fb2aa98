package dns

import (
	"strconv"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The cluster DNS's metrics, served with berth's others from the API server's /metrics (the
// legacy registry); panics are counted in berth_recovered_panics_total{component="dns"}.
var (
	responses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_dns_responses_total",
		Help: "Responses of the cluster DNS, by source (zone: the cluster's records; forward: the upstream servers) and rcode.",
	}, []string{"source", "rcode"})
	duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "berth_dns_request_duration_seconds",
		Help:    "Time the cluster DNS took to answer, by source (zone or forward).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9), // 100 µs to 6.5 s
	}, []string{"source"})
)

func init() { legacyregistry.RawMustRegister(responses, duration) }

const (
	sourceZone    = "zone"
	sourceForward = "forward"
)

func observe(source string, rcode int, start time.Time) {
	name, ok := dns.RcodeToString[rcode]
	if !ok {
		name = strconv.Itoa(rcode)
	}
	responses.WithLabelValues(source, name).Inc()
	duration.WithLabelValues(source).Observe(time.Since(start).Seconds())
}
