package queue

// Queue labels of the pending-pods gauge and the incoming-pods counter (kube-scheduler's
// pending_pods{queue} and queue_incoming_pods_total{queue,event}).
const (
	QueueActive        = "active"
	QueueBackoff       = "backoff"
	QueueUnschedulable = "unschedulable"
	// QueueGated counts the pods in unschedulablePods that a PreEnqueue plugin holds back.
	QueueGated = "gated"
)

// MetricsRecorder receives the queue's metrics; the scheduler adapts its Prometheus
// collectors to it. Calls are made with the queue locked: keep them cheap.
type MetricsRecorder interface {
	// SetPendingPods sets the number of pods in a queue.
	SetPendingPods(queue string, n int)
	// IncomingPod counts a pod entering a queue because of event.
	IncomingPod(queue, event string)
}

type noopRecorder struct{}

func (noopRecorder) SetPendingPods(string, int) {}
func (noopRecorder) IncomingPod(string, string) {}

// pendingCounts are the gauge values last reported, so that only changes are sent.
type pendingCounts struct {
	active, backoff, unschedulable, gated int
}

// syncMetrics reports the sizes of the sub-queues that changed since the last report.
// Callers hold p.lock.
func (p *PriorityQueue) syncMetrics() {
	now := pendingCounts{
		active:        p.activeQ.Len(),
		backoff:       p.backoffQ.Len(),
		unschedulable: len(p.unschedulablePods.pods) - p.unschedulablePods.gated,
		gated:         p.unschedulablePods.gated,
	}
	last := &p.reported
	if now.active != last.active {
		p.metrics.SetPendingPods(QueueActive, now.active)
	}
	if now.backoff != last.backoff {
		p.metrics.SetPendingPods(QueueBackoff, now.backoff)
	}
	if now.unschedulable != last.unschedulable {
		p.metrics.SetPendingPods(QueueUnschedulable, now.unschedulable)
	}
	if now.gated != last.gated {
		p.metrics.SetPendingPods(QueueGated, now.gated)
	}
	*last = now
}
