package replicaset

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestReplicationManager runs the same reconcile for a ReplicationController: its pods
// name it as their controller, its events are on it, and its own status is written.
func TestReplicationManager(t *testing.T) {
	rcGVK := corev1.SchemeGroupVersion.WithKind("ReplicationController")
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rc-uid", Generation: 2},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To[int32](2), Selector: labelsWeb,
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsWeb}},
		},
	}
	orphan := ownedPod(rc, rcGVK, "orphan")
	orphan.OwnerReferences = nil
	f := newFixture(t, true, rc, orphan)
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	want := []string{"create pods web-", "patch pods orphan", "update replicationcontrollers/status web"}
	if diff := cmp.Diff(want, f.actions()); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	created, err := f.client.CoreV1().Pods("default").Get(context.Background(), "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.GetControllerOf(created)
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "ReplicationController" || ref.UID != "rc-uid" {
		t.Errorf("the pod's controller %+v", ref)
	}
	var status *corev1.ReplicationControllerStatus
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			status = &u.GetObject().(*corev1.ReplicationController).Status
		}
	}
	if status == nil || status.Replicas != 1 || status.FullyLabeledReplicas != 1 || status.ObservedGeneration != 2 {
		t.Errorf("status %+v", status)
	}
	events := f.recorder.take()
	if len(events) != 1 || events[0].regarding != "*v1.ReplicationController" || events[0].note != "Created pod: web-1" {
		t.Errorf("events %+v, want one SuccessfulCreate on the ReplicationController", events)
	}
	// An add of its pod observes the creation for the RC's key.
	f.c.podAdded(ownedPod(rc, rcGVK, "web-1"))
	if !f.c.expectations.Satisfied("default/web") {
		t.Error("the RC's creation was not observed")
	}
}
