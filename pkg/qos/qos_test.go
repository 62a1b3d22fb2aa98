package qos

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func res(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func ctr(req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestComputePodQOS(t *testing.T) {
	tests := []struct {
		name string
		pod  corev1.Pod
		want corev1.PodQOSClass
	}{
		{"nothing", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr(nil, nil)}}}, corev1.PodQOSBestEffort},
		{"only extended resources", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr(res("example.com/gpu", "1"), res("example.com/gpu", "1"))}}}, corev1.PodQOSBestEffort},
		{"zero requests", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr(res("cpu", "0"), nil)}}}, corev1.PodQOSBestEffort},
		{"requests only", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr(res("cpu", "100m"), nil)}}}, corev1.PodQOSBurstable},
		{"equal limits", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(res("cpu", "1", "memory", "1Gi"), res("cpu", "1", "memory", "1Gi")),
			ctr(res("cpu", "2", "memory", "1Gi"), res("cpu", "2", "memory", "1Gi")),
		}}}, corev1.PodQOSGuaranteed},
		{"limits without requests, before defaulting", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr(nil, res("cpu", "1", "memory", "1Gi"))}}}, corev1.PodQOSBurstable},
		{"memory limit missing", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr(res("cpu", "1"), res("cpu", "1"))}}}, corev1.PodQOSBurstable},
		{"one container unlimited", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(res("cpu", "1", "memory", "1Gi"), res("cpu", "1", "memory", "1Gi")),
			ctr(nil, nil),
		}}}, corev1.PodQOSBurstable},
		{"init container counts", corev1.Pod{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(res("cpu", "1"), nil)},
			Containers:     []corev1.Container{ctr(nil, nil)},
		}}, corev1.PodQOSBurstable},
		{"pod-level resources win", corev1.Pod{Spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: res("cpu", "1", "memory", "1Gi"), Limits: res("cpu", "1", "memory", "1Gi")},
			Containers: []corev1.Container{ctr(nil, nil)},
		}}, corev1.PodQOSGuaranteed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ComputePodQOS(&tt.pod); got != tt.want {
				t.Errorf("ComputePodQOS() = %s, want %s", got, tt.want)
			}
		})
	}
}
