package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRuntimeClassAdmission: a pod of a RuntimeClass gets the class's overhead, node
// selector and tolerations; a pod of a class that does not exist, or with an overhead of its
// own, is refused with Kubernetes' messages; the handler is immutable.
func TestRuntimeClassAdmission(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	rcs := c.Client.NodeV1().RuntimeClasses()
	rc, err := rcs.Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxed-" + ns},
		Handler:    "runsc",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{"sandbox": "gvisor"},
			Tolerations:  []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rcs.Delete(ctx, rc.Name, metav1.DeleteOptions{}) })

	pod := simplePod("sandboxed")
	pod.Spec.RuntimeClassName = ptr.To(rc.Name)
	got, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Overhead[corev1.ResourceCPU]; q.String() != "250m" {
		t.Errorf("overhead %v, want cpu 250m", got.Spec.Overhead)
	}
	if got.Spec.NodeSelector["sandbox"] != "gvisor" {
		t.Errorf("node selector %v, want the class's", got.Spec.NodeSelector)
	}
	found := false
	for _, tol := range got.Spec.Tolerations {
		found = found || tol.Key == "sandbox"
	}
	if !found {
		t.Errorf("tolerations %v lack the class's", got.Spec.Tolerations)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"missing class", func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("nope") }, `pod rejected: RuntimeClass "nope" not found`},
		{"own overhead", func(p *corev1.Pod) {
			p.Spec.RuntimeClassName = ptr.To(rc.Name)
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, `pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{"selector conflict", func(p *corev1.Pod) {
			p.Spec.RuntimeClassName = ptr.To(rc.Name)
			p.Spec.NodeSelector = map[string]string{"sandbox": "kata"}
		}, `conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata`},
		{"overhead without class", func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, `pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := simplePod("refused")
			tc.mutate(p)
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a 403 with %q", err, tc.want)
			}
		})
	}

	rc.Handler = "kata"
	if _, err := rcs.Update(ctx, rc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "handler: Invalid value: \"kata\": field is immutable") {
		t.Errorf("changing the handler: %v, want a 422 naming handler", err)
	}
}
