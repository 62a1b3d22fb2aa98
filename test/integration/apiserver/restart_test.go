package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-cluster/berth/test/integration/framework"
)

// TestRestart: everything written survives a restart on the same data dir, and the admin
// kubeconfig keeps working (the CA is kept).
func TestRestart(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	first := framework.Start(t, framework.Options{DataDir: dir})
	ns := newNamespace(t, ctx, first.Client)
	cm, err := first.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caBefore := string(first.Config.CAData)
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := framework.Start(t, framework.Options{DataDir: dir})
	if string(second.Config.CAData) != caBefore {
		t.Error("the cluster CA changed across the restart")
	}
	got, err := second.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if got.UID != cm.UID || got.Data["k"] != "v" {
		t.Errorf("after restart: %+v, want the same object", got)
	}
}
