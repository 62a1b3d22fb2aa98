package podgc

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// evictedReason is the status reason the kubelet's eviction manager gives a pod it evicted.
const evictedReason = "Evicted"

func isPodTerminated(pod *corev1.Pod) bool {
	phase := pod.Status.Phase
	return phase != corev1.PodPending && phase != corev1.PodRunning && phase != corev1.PodUnknown
}

// terminatedOverThreshold are the terminated pods beyond the threshold kept, in the order
// upstream deletes them: evicted pods first (so that controllers' terminated pods are kept
// longest), then oldest first, names breaking ties.
func terminatedOverThreshold(pods []*corev1.Pod, threshold int) []*corev1.Pod {
	var terminated []*corev1.Pod
	for _, pod := range pods {
		if isPodTerminated(pod) {
			terminated = append(terminated, pod)
		}
	}
	n := len(terminated) - threshold
	if n <= 0 {
		return nil
	}
	sortByEvictionAndCreation(terminated)
	return terminated[:n]
}

func sortByEvictionAndCreation(pods []*corev1.Pod) {
	evicted := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == evictedReason
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if ea, eb := evicted(a), evicted(b); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// terminatingOnOutOfServiceNodes are the terminating pods on nodes that are not ready and
// tainted node.kubernetes.io/out-of-service, in deletion order.
func terminatingOnOutOfServiceNodes(logger klog.Logger, pods []*corev1.Pod, nodes corelisters.NodeLister) []*corev1.Pod {
	logger.V(4).Info("GC'ing terminating pods that are on out-of-service nodes")
	var doomed []*corev1.Pod
	for _, pod := range pods {
		// An unscheduled one is unscheduledTerminating's.
		if pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" {
			continue
		}
		node, err := nodes.Get(pod.Spec.NodeName)
		if err != nil {
			logger.Error(err, "Failed to get node", "node", klog.KRef("", pod.Spec.NodeName))
			continue
		}
		if !isNodeReady(node) && hasTaint(node, corev1.TaintNodeOutOfService) {
			logger.V(4).Info("Garbage collecting pod that is terminating", "pod", klog.KObj(pod), "phase", pod.Status.Phase)
			doomed = append(doomed, pod)
		}
	}
	sortByEvictionAndCreation(doomed)
	return doomed
}

// unscheduledTerminating are the terminating pods bound to no node.
func unscheduledTerminating(pods []*corev1.Pod) []*corev1.Pod {
	var doomed []*corev1.Pod
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil && pod.Spec.NodeName == "" {
			doomed = append(doomed, pod)
		}
	}
	return doomed
}

func isNodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}
