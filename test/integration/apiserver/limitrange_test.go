package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLimitRanger: a namespace's LimitRange gives pods without resources its defaults (and
// the kubernetes.io/limit-ranger annotation), and refuses pods beyond its bounds with
// Kubernetes' messages; an inconsistent LimitRange is a 422.
func TestLimitRanger(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	q := resource.MustParse
	_, err := c.Client.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Min:            corev1.ResourceList{corev1.ResourceCPU: q("50m")},
			Max:            corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: q("100m")},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lr, err := c.Client.CoreV1().LimitRanges(ns).Get(ctx, "limits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := lr.Spec.Limits[0].Default[corev1.ResourceMemory]; d.String() != "1Gi" {
		t.Errorf("the default memory limit %v, want the max (1Gi)", lr.Spec.Limits[0].Default)
	}

	got, err := c.Client.CoreV1().Pods(ns).Create(ctx, simplePod("defaulted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := got.Spec.Containers[0].Resources
	if cpu, lim := r.Requests[corev1.ResourceCPU], r.Limits[corev1.ResourceCPU]; cpu.String() != "100m" || lim.String() != "1" {
		t.Errorf("resources %+v, want request cpu 100m and limit cpu 1", r)
	}
	if want := "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"; got.Annotations["kubernetes.io/limit-ranger"] != want {
		t.Errorf("annotation %q, want %q", got.Annotations["kubernetes.io/limit-ranger"], want)
	}

	big := simplePod("big")
	big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("2")}
	_, err = c.Client.CoreV1().Pods(ns).Create(ctx, big, metav1.CreateOptions{})
	if want := "maximum cpu usage per Container is 1, but limit is 2"; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a pod over the max: %v, want a 403 with %q", err, want)
	}

	_, err = c.Client.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			Min:  corev1.ResourceList{corev1.ResourceCPU: q("2")},
			Max:  corev1.ResourceList{corev1.ResourceCPU: q("1")},
		}}},
	}, metav1.CreateOptions{})
	if want := "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1"; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("min above max: %v, want a 422 with %q", err, want)
	}
}
