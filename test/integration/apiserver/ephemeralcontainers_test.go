package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodEphemeralContainers: pods/ephemeralcontainers adds a debugging container (as
// kubectl debug does) and changes nothing else; the pod's own endpoint may not, and an
// added one may not be removed.
func TestPodEphemeralContainers(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pods := c.Client.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, simplePod("debugged"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	through := pod.DeepCopy()
	through.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", Stdin: true, TTY: true,
	}, TargetContainerName: pod.Spec.Containers[0].Name}}
	if _, err := pods.Update(ctx, through, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("adding an ephemeral container through the pod itself: %v, want 422", err)
	}

	through.Labels = map[string]string{"ignored": "yes"}
	got, err := pods.UpdateEphemeralContainers(ctx, pod.Name, through, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("pods/ephemeralcontainers: %v", err)
	}
	if n := len(got.Spec.EphemeralContainers); n != 1 || got.Spec.EphemeralContainers[0].TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("the pod's ephemeral containers after the write (defaulted): %+v", got.Spec.EphemeralContainers)
	}
	if got.Labels["ignored"] != "" || got.Generation != pod.Generation+1 {
		t.Errorf("labels %v and generation %d after the write; want them unchanged but for the generation (%d+1)", got.Labels, got.Generation, pod.Generation)
	}

	got.Spec.EphemeralContainers = nil
	_, err = pods.UpdateEphemeralContainers(ctx, pod.Name, got, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !contains(err.Error(), `existing ephemeral containers "debugger" may not be removed`) {
		t.Errorf("removing an ephemeral container: %v, want 422 naming it", err)
	}
}
