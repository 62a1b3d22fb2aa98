// Package apiserver holds the integration tests of berth's API server: the real server on a
// real embedded etcd, in process, driven with client-go.
package apiserver

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/berth-cluster/berth/test/integration/framework"
)

// testContext returns a context that ends with the test or after a minute.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newNamespace creates a namespace for one test and waits for its default service account,
// without which pods are refused.
func newNamespace(t *testing.T, ctx context.Context, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	waitForServiceAccount(t, ctx, client, ns.Name)
	return ns.Name
}

func waitForServiceAccount(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("waiting for the default service account of %s: %v", ns, err)
	}
}

func simplePod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "test"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

// sharedCluster is one control plane for the tests that do not restart or reconfigure it.
func sharedCluster(t *testing.T) *framework.Cluster {
	t.Helper()
	return framework.StartShared(t)
}

// quietCluster is the package's shared control plane with only the namespace and service
// account controllers (pods need a namespace's "default" account), for tests that write what
// another controller would (a status, a scale) and must not race it.
func quietCluster(t *testing.T) *framework.Cluster {
	t.Helper()
	return framework.StartShared(t, framework.Options{Controllers: []string{"namespace", "serviceaccount"}})
}

func TestMain(m *testing.M) {
	framework.Main(m)
}
