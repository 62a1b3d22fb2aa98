// Package qos computes a pod's quality-of-service class. The API server records it in
// status.qosClass when a pod is created; the node agent places the pod's cgroup under the
// parent of its class and the eviction manager ranks pods by it.
package qos

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// computeResources are the resources that decide the class.
var computeResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// PodQOSClass returns the class of pod:
//   - BestEffort when nothing requests or limits cpu or memory;
//   - Guaranteed when cpu and memory are limited everywhere (pod-level resources, or every
//     init and app container) and every request equals its limit;
//   - Burstable otherwise.
//
// Ephemeral containers do not count: they have no resources.
func PodQOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS computes the class from the spec, ignoring status.qosClass.
func ComputePodQOS(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	add := func(r corev1.ResourceRequirements) {
		for _, name := range computeResources {
			if q, ok := r.Requests[name]; ok && q.Sign() > 0 {
				addTo(requests, name, q)
			}
			q, ok := r.Limits[name]
			if ok && q.Sign() > 0 {
				addTo(limits, name, q)
			} else {
				guaranteed = false
			}
		}
	}
	if pod.Spec.Resources != nil {
		add(*pod.Spec.Resources)
	} else {
		for i := range pod.Spec.InitContainers {
			add(pod.Spec.InitContainers[i].Resources)
		}
		for i := range pod.Spec.Containers {
			add(pod.Spec.Containers[i].Resources)
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func addTo(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if cur, ok := list[name]; ok {
		cur.Add(q)
		list[name] = cur
		return
	}
	list[name] = q.DeepCopy()
}
