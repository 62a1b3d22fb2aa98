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

// TestSystemObjects: the system namespaces and priority classes exist and every namespace
// gets its default service account.
func TestSystemObjects(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			ns, err := c.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return err == nil && ns.Status.Phase == corev1.NamespaceActive, nil
		})
		if err != nil {
			t.Errorf("namespace %s: %v", name, err)
		}
		waitForServiceAccount(t, ctx, c.Client, name)
	}
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc, err := c.Client.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil || pc.Value != value {
			t.Errorf("priority class %s: %v %v", name, pc, err)
		}
	}
	err := c.Client.SchedulingV1().PriorityClasses().Delete(ctx, "system-node-critical", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("deleting a system priority class: %v, want 403", err)
	}
	err = c.Client.CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("deleting kube-system: %v, want 403", err)
	}
	// The default service account comes back if deleted.
	ns := newNamespace(t, ctx, c.Client)
	if err := c.Client.CoreV1().ServiceAccounts(ns).Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForServiceAccount(t, ctx, c.Client, ns)
}

// TestNamespaceDeletion: a terminating namespace refuses new objects, its contents go, a pod
// waiting for its node holds it, and then it goes.
func TestNamespaceDeletion(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := simplePod("bound")
	bound.Spec.NodeName = "node-a"
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
		t.Fatalf("namespace after delete: %+v %v, want Terminating", got.Status, err)
	}
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !contains(err.Error(), "because it is being terminated") {
		t.Errorf("creating in a terminating namespace: %v, want 403", err)
	}
	// Pods go first, as in Kubernetes: the bound pod waits for its node agent, and the rest
	// of the namespace (the config map it might need while stopping) stays until it is gone.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, "bound", metav1.GetOptions{})
		return err == nil && pod.DeletionTimestamp != nil, err
	})
	if err != nil {
		t.Fatalf("the bound pod is not terminating: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NamespaceContentRemaining && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no NamespaceContentRemaining condition while the pod remains: %v", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{}); err != nil {
		t.Errorf("the config map went before the pod: %v", err)
	}
	// The node agent's confirmation.
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace not gone after its last pod: %v", err)
	}
}
