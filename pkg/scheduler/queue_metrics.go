package scheduler

import "github.com/berth-cluster/berth/pkg/scheduler/metrics"

// queueMetrics reports the queue's sizes and arrivals as kube-scheduler's metrics.
type queueMetrics struct{}

func (queueMetrics) SetPendingPods(queue string, n int) {
	metrics.PendingPods.WithLabelValues(queue).Set(float64(n))
}

func (queueMetrics) IncomingPod(queue, event string) {
	metrics.SchedulerQueueIncomingPods.WithLabelValues(queue, event).Inc()
}
