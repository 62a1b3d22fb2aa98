package stats

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The node API's /metrics: the kubelet's metrics of what runs on the node, read from the
// runtime at each scrape.

var (
	nodeNameDesc = prometheus.NewDesc("kubelet_node_name", "The node's name. The count is always 1.", []string{"node"}, nil)
	podsDesc     = prometheus.NewDesc("kubelet_running_pods", "Number of pods that have a running pod sandbox", nil, nil)
	ctrsDesc     = prometheus.NewDesc("kubelet_running_containers", "Number of containers currently running", []string{"container_state"}, nil)
)

type collector struct {
	nodeName string
	runtime  internalapi.RuntimeService
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- nodeNameDesc
	ch <- podsDesc
	ch <- ctrsDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(nodeNameDesc, prometheus.GaugeValue, 1, c.nodeName)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sandboxes, err := c.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing sandboxes for metrics")
		return
	}
	ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(len(sandboxes)))
	containers, err := c.runtime.ListContainers(ctx, nil)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing containers for metrics")
		return
	}
	byState := map[string]int{"created": 0, "running": 0, "exited": 0, "unknown": 0}
	for _, ctr := range containers {
		state := strings.ToLower(strings.TrimPrefix(ctr.State.String(), "CONTAINER_"))
		byState[state]++
	}
	for state, n := range byState {
		ch <- prometheus.MustNewConstMetric(ctrsDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// MetricsHandler serves the node's metrics in the Prometheus text format: the gauges read
// from the runtime at each scrape, the node agent's own collectors, and the panics the
// process recovered (berth_recovered_panics_total).
func MetricsHandler(nodeName string, runtime internalapi.RuntimeService, own ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{nodeName: nodeName, runtime: runtime}, panics.Recovered)
	reg.MustRegister(own...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
