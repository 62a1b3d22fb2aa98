package apiserver

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

const rootCAConfigMap = "kube-root-ca.crt"

// waitForRootCA waits until ns holds kube-root-ca.crt with the cluster's CA and Kubernetes'
// description.
func waitForRootCA(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string, ca []byte) {
	t.Helper()
	var last *corev1.ConfigMap
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = cm
		return cm.Data["ca.crt"] == string(ca) && len(cm.Data) == 1 &&
			strings.HasPrefix(cm.Annotations["kubernetes.io/description"], "Contains a CA bundle that can be used to verify the kube-apiserver"), nil
	})
	if err != nil {
		t.Fatalf("%s/%s: %v (last seen %+v)", ns, rootCAConfigMap, err, last)
	}
}

// TestRootCAPublisher: the root CA publisher (run by berth's controllers beside the API
// server) gives every namespace, a new one too, kube-root-ca.crt holding the CA that verifies
// the API server, and puts it back when it is deleted or edited.
func TestRootCAPublisher(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ca := c.Config.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(c.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Fatalf("the admin kubeconfig's CA is %q", ca)
	}
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		waitForRootCA(t, ctx, c.Client, ns, ca)
	}
	ns := newNamespace(t, ctx, c.Client)
	waitForRootCA(t, ctx, c.Client, ns, ca)

	if err := c.Client.CoreV1().ConfigMaps(ns).Delete(ctx, rootCAConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRootCA(t, ctx, c.Client, ns, ca)

	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"ca.crt": "forged"}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRootCA(t, ctx, c.Client, ns, ca)
}

// TestPodGetsAPIAccessVolume: the API server's ServiceAccount admission gives a new pod the
// kube-api-access-<5> volume in its containers, and none when automountServiceAccountToken
// is false on the pod or on its service account.
func TestPodGetsAPIAccessVolume(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pod := simplePod("api-access")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36"}}
	got, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Volumes) != 1 || !strings.HasPrefix(got.Spec.Volumes[0].Name, "kube-api-access-") || len(got.Spec.Volumes[0].Name) != len("kube-api-access-")+5 {
		t.Fatalf("volumes %+v, want one kube-api-access-<5>", got.Spec.Volumes)
	}
	vol := got.Spec.Volumes[0]
	p := vol.Projected
	if p == nil || len(p.Sources) != 3 || p.DefaultMode == nil || *p.DefaultMode != 0o644 ||
		p.Sources[0].ServiceAccountToken == nil || *p.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 || p.Sources[0].ServiceAccountToken.Path != "token" ||
		p.Sources[1].ConfigMap == nil || p.Sources[1].ConfigMap.Name != rootCAConfigMap ||
		p.Sources[2].DownwardAPI == nil || p.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("the volume is %+v", vol)
	}
	want := corev1.VolumeMount{Name: vol.Name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		if len(c.VolumeMounts) != 1 || !equality.Semantic.DeepEqual(c.VolumeMounts[0], want) {
			t.Errorf("container %s mounts %+v, want %+v", c.Name, c.VolumeMounts, want)
		}
	}

	optOut := simplePod("opt-out")
	optOut.Spec.AutomountServiceAccountToken = new(bool)
	if got, err := c.Client.CoreV1().Pods(ns).Create(ctx, optOut, metav1.CreateOptions{}); err != nil || len(got.Spec.Volumes) != 0 {
		t.Errorf("a pod that opts out: %v, volumes %+v", err, got.Spec.Volumes)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: new(bool)}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quiet := simplePod("quiet")
	quiet.Spec.ServiceAccountName = "quiet"
	if got, err := c.Client.CoreV1().Pods(ns).Create(ctx, quiet, metav1.CreateOptions{}); err != nil || len(got.Spec.Volumes) != 0 {
		t.Errorf("a pod of an account that opts out: %v, volumes %+v", err, got.Spec.Volumes)
	}
}
