package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestLimitRangerLiveLookup: a LimitRange the informer has not seen yet (created just before
// the pod) is found by asking the API server, and its defaults applied; the answer is kept,
// so that a burst of pods makes one list.
func TestLimitRangerLiveLookup(t *testing.T) {
	informed := fake.NewClientset() // what the informer saw: nothing yet
	factory := informers.NewSharedInformerFactory(informed, 0)
	live := fake.NewClientset(&corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "ns"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}}},
	})
	p := newLimitRanger()
	p.SetExternalKubeInformerFactory(factory)
	p.SetExternalKubeClientSet(live)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	for i := range 3 {
		pod := newPod(nil)
		if err := p.Admit(context.Background(), podAttributes(pod, admission.Create), nil); err != nil {
			t.Fatal(err)
		}
		if got := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "100m" {
			t.Errorf("pod %d: cpu request %q, want the unseen LimitRange's 100m", i, got.String())
		}
	}
	lists := 0
	for _, a := range live.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "limitranges" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d live lists for three pods, want 1 (the answer kept for %v)", lists, liveTTL)
	}
}
