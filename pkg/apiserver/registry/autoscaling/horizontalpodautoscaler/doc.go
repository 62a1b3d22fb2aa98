// Package horizontalpodautoscaler is the registry of HorizontalPodAutoscalers, served at
// autoscaling/v2 (the storage version, preferred) and autoscaling/v1: their conversions, their
// defaults (upstream's SetDefaults_HorizontalPodAutoscaler of both versions), their validation
// (upstream's pkg/apis/autoscaling/validation), their strategies, table and storage.
//
// Both versions are one stored object. berth has no internal types of its own, so the internal
// HorizontalPodAutoscaler of the scheme is the autoscaling/v2 Go type: a v2 request is only
// relabelled on its way in and out, a v1 request is converted (conversion.go), as events.k8s.io
// Events are converted to the core/v1 Events they are stored as. What v1 cannot say (metrics
// other than CPU utilization, conditions, current metrics, scaling behavior) travels in the
// autoscaling.alpha.kubernetes.io annotations, as kube-apiserver writes them.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the convert,
// default and validate steps for /apis/autoscaling/{v1,v2}/namespaces/{ns}/horizontalpodautoscalers
// and their status. The controller that scales workloads is not here.
package horizontalpodautoscaler
