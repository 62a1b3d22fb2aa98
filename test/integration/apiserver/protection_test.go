package apiserver

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The pvc-protection and pv-protection controllers (sharedCluster runs them): they remove the
// protection finalizers that admission adds, once nothing uses the claim or volume.

// gone waits until get reports NotFound.
func gone(t *testing.T, ctx context.Context, what string, within time.Duration, get func() error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, within, true, func(context.Context) (bool, error) {
		return apierrors.IsNotFound(get()), nil
	})
	if err != nil {
		t.Fatalf("%s is not gone: %v", what, err)
	}
}

// TestClaimProtectionWaitsForPod: a deleted claim that a scheduled pod names stays,
// Terminating, while the pod exists, and goes once the pod is deleted.
func TestClaimProtectionWaitsForPod(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	claims := c.Client.CoreV1().PersistentVolumeClaims(ns)
	if _, err := claims.Create(ctx, testClaim("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := simplePod("user")
	pod.Spec.NodeName = "node-a" // only a scheduled pod holds its claims, as upstream
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller sees the deleted claim at once; give it time to act wrongly.
	time.Sleep(2 * time.Second)
	held, err := claims.Get(ctx, "data", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("a deleted claim in use: %v, %+v; want it Terminating", err, held)
	}
	if len(held.Finalizers) != 1 || held.Finalizers[0] != "kubernetes.io/pvc-protection" {
		t.Errorf("finalizers of the claim in use %v", held.Finalizers)
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	gone(t, ctx, "the claim after its pod", 20*time.Second, func() error {
		_, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return err
	})
}

// TestNamespaceWithClaimDeleted: a namespace holding a claim is deleted completely.
func TestNamespaceWithClaimDeleted(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, testClaim("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, ctx, "the namespace", 60*time.Second, func() error {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	})
}

// TestUnboundVolumeDeletedAtOnce: a volume that is not Bound loses its finalizer on delete;
// a Bound one is held until it is no longer Bound.
func TestUnboundVolumeDeletedAtOnce(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client) // volumes are cluster-scoped: named after the namespace
	volumes := c.Client.CoreV1().PersistentVolumes()
	if _, err := volumes.Create(ctx, testVolume(ns+"-free"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := volumes.Delete(ctx, ns+"-free", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, ctx, "the Pending volume", 20*time.Second, func() error {
		_, err := volumes.Get(ctx, ns+"-free", metav1.GetOptions{})
		return err
	})

	bound, err := volumes.Create(ctx, testVolume(ns+"-bound"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound.Status.Phase = corev1.VolumeBound
	if _, err := volumes.UpdateStatus(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("marking the volume Bound: %v", err)
	}
	if err := volumes.Delete(ctx, ns+"-bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	held, err := volumes.Get(ctx, ns+"-bound", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("a deleted Bound volume: %v, %+v; want it Terminating", err, held)
	}
	held.Status.Phase = corev1.VolumeReleased
	if _, err := volumes.UpdateStatus(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("releasing the volume: %v", err)
	}
	gone(t, ctx, "the released volume", 20*time.Second, func() error {
		_, err := volumes.Get(ctx, ns+"-bound", metav1.GetOptions{})
		return err
	})
}
