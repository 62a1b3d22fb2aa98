package apiserver

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func ownerRef(kind, name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: name, UID: uid, BlockOwnerDeletion: ptr.To(block)}
}

func createConfigMap(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, name string, finalizers []string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, OwnerReferences: owners, Finalizers: finalizers,
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating config map %s: %v", name, err)
	}
	return cm
}

// waitGone waits until get reports NotFound.
func waitGone(t *testing.T, ctx context.Context, what string, get func(ctx context.Context) error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("waiting for %s to be deleted: %v", what, err)
	}
}

func configMapGetter(client kubernetes.Interface, ns, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}
}

// TestGarbageCollector: the collector, run by the controller manager against the real API
// server, carries out background, foreground and orphan deletion and collects dependents of
// owners that never existed.
func TestGarbageCollector(t *testing.T) {
	c := sharedCluster(t)
	client := c.Client

	t.Run("background", func(t *testing.T) {
		ctx := testContext(t)
		ns := newNamespace(t, ctx, client)
		owner := createConfigMap(t, ctx, client, ns, "owner", nil)
		secretOwner, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		createConfigMap(t, ctx, client, ns, "dep", nil, ownerRef("ConfigMap", owner.Name, owner.UID, false))
		createConfigMap(t, ctx, client, ns, "two-owners", nil,
			ownerRef("ConfigMap", owner.Name, owner.UID, false), ownerRef("Secret", secretOwner.Name, secretOwner.UID, false))
		template, err := client.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "template"},
			Template:   corev1.PodTemplateSpec{Spec: simplePod("x").Spec},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := simplePod("pod")
		pod.OwnerReferences = []metav1.OwnerReference{ownerRef("PodTemplate", template.Name, template.UID, true)}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := client.CoreV1().PodTemplates(ns).Delete(ctx, template.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, ctx, "the dependent config map", configMapGetter(client, ns, "dep"))
		waitGone(t, ctx, "the template's pod", func(ctx context.Context) error {
			_, err := client.CoreV1().Pods(ns).Get(ctx, "pod", metav1.GetOptions{})
			return err
		})
		// A dependent with a remaining owner stays, without the deleted owner's reference.
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "two-owners", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == secretOwner.UID, nil
		})
		if err != nil {
			t.Errorf("the dependent with two owners: %v, want it kept with only the secret's reference", err)
		}
	})

	t.Run("foreground", func(t *testing.T) {
		ctx := testContext(t)
		ns := newNamespace(t, ctx, client)
		owner := createConfigMap(t, ctx, client, ns, "owner", nil)
		// The dependent's own finalizer keeps it (and so its owner) until the test lets go.
		const hold = "test.berth.dev/hold"
		createConfigMap(t, ctx, client, ns, "dep", []string{hold}, ownerRef("ConfigMap", owner.Name, owner.UID, true))

		if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			dep, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dep", metav1.GetOptions{})
			return err == nil && dep.DeletionTimestamp != nil, err
		})
		if err != nil {
			t.Fatalf("waiting for the dependent's deletion to start: %v", err)
		}
		got, err := client.CoreV1().ConfigMaps(ns).Get(ctx, owner.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner while its blocking dependent exists: %+v, %v; want it kept with the foregroundDeletion finalizer", got.ObjectMeta, err)
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Patch(ctx, "dep", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, ctx, "the dependent", configMapGetter(client, ns, "dep"))
		waitGone(t, ctx, "the owner", configMapGetter(client, ns, owner.Name))
	})

	t.Run("orphan", func(t *testing.T) {
		ctx := testContext(t)
		ns := newNamespace(t, ctx, client)
		owner := createConfigMap(t, ctx, client, ns, "owner", nil)
		createConfigMap(t, ctx, client, ns, "dep", nil, ownerRef("ConfigMap", owner.Name, owner.UID, true))

		if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, ctx, "the owner", configMapGetter(client, ns, owner.Name))
		dep, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dep", metav1.GetOptions{})
		if err != nil || len(dep.OwnerReferences) != 0 {
			t.Fatalf("orphaned dependent: %+v, %v; want it kept without owner references", dep, err)
		}
		// And it stays: nothing collects an orphan.
		time.Sleep(time.Second)
		if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dep", metav1.GetOptions{}); err != nil {
			t.Errorf("orphaned dependent a second later: %v", err)
		}
	})

	t.Run("dangling", func(t *testing.T) {
		ctx := testContext(t)
		ns := newNamespace(t, ctx, client)
		createConfigMap(t, ctx, client, ns, "dep", nil, ownerRef("Secret", "never-existed", "00000000-0000-0000-0000-000000000001", false))
		// A namespaced owner of the same name in another namespace is no owner.
		other := newNamespace(t, ctx, client)
		elsewhere := createConfigMap(t, ctx, client, other, "owner", nil)
		createConfigMap(t, ctx, client, ns, "cross", nil, ownerRef("ConfigMap", elsewhere.Name, elsewhere.UID, false))
		waitGone(t, ctx, "the dependent of an owner that never existed", configMapGetter(client, ns, "dep"))
		waitGone(t, ctx, "the dependent of an owner in another namespace", configMapGetter(client, ns, "cross"))
		if _, err := client.CoreV1().ConfigMaps(other).Get(ctx, elsewhere.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the other namespace's config map: %v, want it untouched", err)
		}
	})
}
