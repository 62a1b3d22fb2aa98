// Package metrics holds the scheduler's Prometheus metrics, with kube-scheduler's names,
// labels and buckets, so that dashboards and alerts written for kube-scheduler work on berth.
//
// Every part of seed 003's flow records here: the queue (pending_pods, queue_incoming_pods_total),
// scheduleOne (schedule_attempts_total, scheduling_attempt_duration_seconds,
// scheduling_algorithm_duration_seconds, pod_scheduling_*), the framework runtime
// (framework_extension_point_duration_seconds, plugin_execution_duration_seconds,
// permit_wait_duration_seconds), preemption, the parallelizer (goroutines) and the cache
// (cache_size).
//
// The collectors are package-level so that callers write
// metrics.ScheduleAttempts.WithLabelValues(...); main registers them once with Register.
package metrics

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SchedulerSubsystem prefixes every metric name.
const SchedulerSubsystem = "scheduler"

// Extension point label values (extension_point).
const (
	PreFilter                   = "PreFilter"
	Filter                      = "Filter"
	PreFilterExtensionAddPod    = "PreFilterExtensionAddPod"
	PreFilterExtensionRemovePod = "PreFilterExtensionRemovePod"
	PostFilter                  = "PostFilter"
	PreScore                    = "PreScore"
	Score                       = "Score"
	ScoreExtensionNormalize     = "ScoreExtensionNormalize"
	PreBind                     = "PreBind"
	Bind                        = "Bind"
	PostBind                    = "PostBind"
	Reserve                     = "Reserve"
	Unreserve                   = "Unreserve"
	Permit                      = "Permit"
)

// Operation label values of scheduler_goroutines besides the extension points above.
const (
	Binding              = "binding"
	PrioritizingExtender = "prioritizing_extender"
	Preemption           = "preemption"
)

// Result label values of schedule_attempts_total and scheduling_attempt_duration_seconds.
const (
	ScheduledResult     = "scheduled"
	UnschedulableResult = "unschedulable"
	ErrorResult         = "error"
)

// Queue label values of pending_pods and queue_incoming_pods_total.
const (
	ActiveQueue        = "active"
	BackoffQueue       = "backoff"
	UnschedulableQueue = "unschedulable"
	GatedQueue         = "gated"
)

// Cache size label values (type).
const (
	CacheNodes       = "nodes"
	CachePods        = "pods"
	CacheAssumedPods = "assumed_pods"
)

// help prefixes the text with the stability level, as component-base does, so that /metrics
// reads as kube-scheduler's.
func help(level, text string) string { return "[" + level + "] " + text }

// The collectors. Histograms start at 1 ms unless said otherwise, as kube-scheduler's.
var (
	ScheduleAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "schedule_attempts_total",
		Help:      help("STABLE", "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem."),
	}, []string{"result", "profile"})

	SchedulingLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "scheduling_attempt_duration_seconds",
		Help:      help("STABLE", "Scheduling attempt latency in seconds (scheduling algorithm + binding)"),
		Buckets:   prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result", "profile"})

	SchedulingAlgorithmLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "scheduling_algorithm_duration_seconds",
		Help:      help("BETA", "Scheduling algorithm latency in seconds"),
		Buckets:   prometheus.ExponentialBuckets(0.001, 2, 15),
	})

	// PodSchedulingSLIDuration runs from the pod's first entry into the queue to its
	// successful scheduling attempt; 10 ms up to ~88 min.
	PodSchedulingSLIDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "pod_scheduling_sli_duration_seconds",
		Help:      help("BETA", "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts."),
		Buckets:   prometheus.ExponentialBuckets(0.01, 2, 20),
	}, []string{"attempts"})

	PodSchedulingAttempts = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "pod_scheduling_attempts",
		Help:      help("STABLE", "Number of attempts to successfully schedule a pod."),
		Buckets:   prometheus.ExponentialBuckets(1, 2, 5),
	})

	PendingPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "pending_pods",
		Help:      help("STABLE", "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated."),
	}, []string{"queue"})

	SchedulerQueueIncomingPods = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "queue_incoming_pods_total",
		Help:      help("STABLE", "Number of pods added to scheduling queues by event and queue type."),
	}, []string{"queue", "event"})

	// FrameworkExtensionPointDuration starts at 0.1 ms, last bucket [~200ms, Inf).
	FrameworkExtensionPointDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "framework_extension_point_duration_seconds",
		Help:      help("STABLE", "Latency for running all plugins of a specific extension point."),
		Buckets:   prometheus.ExponentialBuckets(0.0001, 2, 12),
	}, []string{"extension_point", "status", "profile"})

	// PluginExecutionDuration starts at 0.01 ms with a factor of 1.5: plugins are fast and
	// their latency matters at that grain.
	PluginExecutionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "plugin_execution_duration_seconds",
		Help:      help("BETA", "Duration for running a plugin at a specific extension point."),
		Buckets:   prometheus.ExponentialBuckets(0.00001, 1.5, 20),
	}, []string{"plugin", "extension_point", "status"})

	PermitWaitDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "permit_wait_duration_seconds",
		Help:      help("BETA", "Duration of waiting on permit."),
		Buckets:   prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result"})

	PreemptionAttempts = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "preemption_attempts_total",
		Help:      help("STABLE", "Total preemption attempts in the cluster till now"),
	})

	// PreemptionVictims: more than 64 victims is rare, so [64, Inf) is one bucket.
	PreemptionVictims = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "preemption_victims",
		Help:      help("STABLE", "Number of selected preemption victims for preemption initiated by a single pod"),
		Buckets:   prometheus.ExponentialBuckets(1, 2, 7),
	})

	UnschedulableReasons = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "unschedulable_pods",
		Help:      help("BETA", "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin."),
	}, []string{"plugin", "profile"})

	Goroutines = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "goroutines",
		Help:      help("BETA", "Number of running goroutines split by the work they do such as binding."),
	}, []string{"operation"})

	CacheSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: SchedulerSubsystem,
		Name:      "cache_size",
		Help:      help("ALPHA", "Number of nodes, pods, and assumed (bound) pods in the scheduler cache."),
	}, []string{"type"})
)

// collectors is every metric Register registers.
func collectors() []prometheus.Collector {
	return []prometheus.Collector{
		ScheduleAttempts, SchedulingLatency, SchedulingAlgorithmLatency,
		PodSchedulingSLIDuration, PodSchedulingAttempts,
		PendingPods, SchedulerQueueIncomingPods,
		FrameworkExtensionPointDuration, PluginExecutionDuration, PermitWaitDuration,
		PreemptionAttempts, PreemptionVictims,
		UnschedulableReasons, Goroutines, CacheSize,
	}
}

// Register registers the scheduler's metrics with r. Registering again with the same r is a
// no-op; any other failure (a name taken by a different metric) panics, as MustRegister does.
func Register(r prometheus.Registerer) {
	for _, c := range collectors() {
		if err := r.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) && are.ExistingCollector == c {
				continue
			}
			panic(err)
		}
	}
}

// PodScheduled records a successful scheduling attempt that took seconds.
func PodScheduled(profile string, seconds float64) { observeAttempt(ScheduledResult, profile, seconds) }

// PodUnschedulable records an attempt that found no node.
func PodUnschedulable(profile string, seconds float64) {
	observeAttempt(UnschedulableResult, profile, seconds)
}

// PodScheduleError records an attempt that failed inside the scheduler.
func PodScheduleError(profile string, seconds float64) { observeAttempt(ErrorResult, profile, seconds) }

func observeAttempt(result, profile string, seconds float64) {
	SchedulingLatency.WithLabelValues(result, profile).Observe(seconds)
	ScheduleAttempts.WithLabelValues(result, profile).Inc()
}

// ActivePods is pending_pods{queue="active"}.
func ActivePods() prometheus.Gauge { return PendingPods.WithLabelValues(ActiveQueue) }

// BackoffPods is pending_pods{queue="backoff"}.
func BackoffPods() prometheus.Gauge { return PendingPods.WithLabelValues(BackoffQueue) }

// UnschedulablePods is pending_pods{queue="unschedulable"}.
func UnschedulablePods() prometheus.Gauge { return PendingPods.WithLabelValues(UnschedulableQueue) }

// GatedPods is pending_pods{queue="gated"}.
func GatedPods() prometheus.Gauge { return PendingPods.WithLabelValues(GatedQueue) }

// UnschedulableReason is unschedulable_pods{plugin, profile}.
func UnschedulableReason(plugin, profile string) prometheus.Gauge {
	return UnschedulableReasons.WithLabelValues(plugin, profile)
}

// AttemptsLabel is the attempts label of pod_scheduling_sli_duration_seconds: the number of
// attempts, capped at "15+" to bound the metric's cardinality.
func AttemptsLabel(attempts int) string {
	if attempts >= 15 {
		return "15+"
	}
	return strconv.Itoa(attempts)
}

// SinceInSeconds is the time since start, in seconds.
func SinceInSeconds(start time.Time) float64 { return time.Since(start).Seconds() }
