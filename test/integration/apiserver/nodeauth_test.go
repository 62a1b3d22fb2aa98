package apiserver

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// nodeClient is a client with a node's certificate from the cluster CA.
func nodeClient(t *testing.T, c *framework.Cluster, node string) kubernetes.Interface {
	t.Helper()
	ca, err := pki.EnsureCA(cluster.PKIDir(c.DataDir), "berth-ca")
	if err != nil {
		t.Fatal(err)
	}
	data, err := cluster.ClientKubeconfig(ca, c.Config.Host, "system:node:"+node, []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	config.QPS, config.Burst = -1, 0
	return kubernetes.NewForConfigOrDie(config)
}

func wantForbidden(t *testing.T, what string, err error, message string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !contains(err.Error(), message) {
		t.Errorf("%s: %v, want 403 with %q", what, err, message)
	}
}

// TestNodeAuthorization: with node-a's and node-b's certificates and a pod bound to node-a
// that mounts a secret, node-b may not read that secret, write node-a's status or the pod's
// status, while node-a may; node-a may not give itself a node-restriction label.
func TestNodeAuthorization(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	admin := c.Client
	ns := newNamespace(t, ctx, admin)
	for _, name := range []string{"node-a", "node-b"} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a-secret"},
		StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := simplePod("on-a")
	pod.Spec.NodeName = "node-a"
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "a-secret"}}},
		{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeA, nodeB := nodeClient(t, c, "node-a"), nodeClient(t, c, "node-b")

	// The graph learns of the pod through an informer: node-a's access comes shortly after.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := nodeA.CoreV1().Secrets(ns).Get(ctx, "a-secret", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("node-a never read the secret of its pod: %v", err)
	}
	_, err = nodeB.CoreV1().Secrets(ns).Get(ctx, "a-secret", metav1.GetOptions{})
	wantForbidden(t, "node-b reading node-a's pod's secret", err,
		`User "system:node:node-b" cannot get resource "secrets" in API group "" in the namespace "`+ns+`": node: no relationship found between node 'node-b' and this object`)

	statusPatch := []byte(`{"status":{"capacity":{"pods":"10"}}}`)
	_, err = nodeB.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, statusPatch, metav1.PatchOptions{}, "status")
	wantForbidden(t, "node-b patching node-a's status", err, `node "node-b" is not allowed to modify node "node-a"`)
	if _, err := nodeA.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, statusPatch, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("node-a patching its status: %v", err)
	}
	_, err = nodeB.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	wantForbidden(t, "node-b reading node-a", err, "node 'node-b' cannot read 'node-a', only its own Node object")

	pod.Status.Phase = corev1.PodRunning
	_, err = nodeB.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	wantForbidden(t, "node-b writing the status of node-a's pod", err,
		`node "node-b" can only update pod status for pods with spec.nodeName set to itself`)
	podStatusPatch := []byte(`{"status":{"phase":"Running"}}`)
	_, err = nodeB.CoreV1().Pods(ns).Patch(ctx, "on-a", types.StrategicMergePatchType, podStatusPatch, metav1.PatchOptions{}, "status")
	wantForbidden(t, "node-b patching the status of node-a's pod", err,
		`node "node-b" can only update pod status for pods with spec.nodeName set to itself`)
	if _, err := nodeA.CoreV1().Pods(ns).Patch(ctx, "on-a", types.StrategicMergePatchType, podStatusPatch, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("node-a patching its pod's status: %v", err)
	}

	// Tokens: for the service account of a pod of its own, bound to that pod.
	tokenFor := func(uid types.UID) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "on-a", UID: uid}}}
	}
	if _, err := nodeA.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", tokenFor(pod.UID), metav1.CreateOptions{}); err != nil {
		t.Errorf("node-a requesting a token for its pod: %v", err)
	}
	_, err = nodeA.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", tokenFor("stale"), metav1.CreateOptions{})
	wantForbidden(t, "node-a requesting a token bound to a stale pod UID", err,
		"the UID in the bound object reference (stale) does not match the UID in record")
	_, err = nodeB.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", tokenFor(pod.UID), metav1.CreateOptions{})
	wantForbidden(t, "node-b requesting a token for node-a's pod", err,
		`cannot create resource "serviceaccounts/token" in API group "" in the namespace "`+ns+`": node: no relationship found between node 'node-b' and this object`)

	// Pods: only through the node's own field selector.
	// Other tests' DaemonSets put pods on every node of the shared cluster: count this test's.
	if list, err := nodeA.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"}); err != nil || len(inNamespace(list.Items, ns)) != 1 {
		t.Errorf("node-a listing its pods: %v, %d pods in %s", err, len(inNamespace(list.Items, ns)), ns)
	}
	_, err = nodeA.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "node-a listing all pods", err, "can only list/watch pods with spec.nodeName field selector")
	_, err = nodeB.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	wantForbidden(t, "node-b listing node-a's pods", err, "can only list/watch pods with spec.nodeName field selector")

	// Leases: its own only.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	_, err = nodeB.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
	wantForbidden(t, "node-b creating node-a's lease", err, "can only access node lease with the same name as the requesting node")
	if _, err := nodeA.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Errorf("node-a creating its lease: %v", err)
	}

	labelPatch := []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/role":"db"}}}`)
	_, err = nodeA.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, labelPatch, metav1.PatchOptions{})
	wantForbidden(t, "node-a setting a node-restriction label", err,
		`nodes "node-a" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/role`)

	// Pods: a node deletes only its own, creates only mirror pods of its own.
	err = nodeB.CoreV1().Pods(ns).Delete(ctx, "on-a", metav1.DeleteOptions{})
	wantForbidden(t, "node-b deleting node-a's pod", err, `node "node-b" can only delete pods with spec.nodeName set to itself`)
	_, err = nodeA.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sneaky"},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	wantForbidden(t, "node-a creating a pod", err, `pod does not have "kubernetes.io/config.mirror" annotation, node "node-a" can only create mirror pods`)
	self, err := admin.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controller := true
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-node-a", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "h"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: self.UID, Controller: &controller}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if _, err := nodeA.CoreV1().Pods(ns).Create(ctx, mirror, metav1.CreateOptions{}); err != nil {
		t.Errorf("node-a creating its mirror pod: %v", err)
	}

	// Once the pod is gone, so is node-a's access to its secret.
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "on-a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := nodeA.CoreV1().Secrets(ns).Get(ctx, "a-secret", metav1.GetOptions{})
		return apierrors.IsForbidden(err), nil
	}); err != nil {
		t.Errorf("node-a still reads the secret of its deleted pod: %v", err)
	}
}

// TestComponentRunsAsItsIdentity: a component of the control plane with a node identity
// reaches the API server as that node (the node authorizer answers it), not as the admin.
func TestComponentRunsAsItsIdentity(t *testing.T) {
	results := make(chan [2]error, 1)
	framework.Start(t, framework.Options{NoControllers: true, ComponentIdentities: true, Components: []cluster.Component{{
		Name: "node", Identity: cluster.NodeIdentity("node-x"),
		Run: func(ctx context.Context, config *rest.Config) error {
			client, err := kubernetes.NewForConfig(config)
			if err != nil {
				return err
			}
			_, all := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			_, own := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-x"})
			select {
			case results <- [2]error{all, own}:
			default:
			}
			<-ctx.Done()
			return nil
		},
	}}})
	var r [2]error
	select {
	case r = <-results:
	case <-time.After(time.Minute):
		t.Fatal("the component did not run")
	}
	wantForbidden(t, "the node component listing all pods", r[0],
		`User "system:node:node-x" cannot list resource "pods" in API group "" at the cluster scope: node: can only list/watch pods with spec.nodeName field selector`)
	if r[1] != nil {
		t.Errorf("the node component listing its own pods: %v", r[1])
	}
}

// inNamespace are the pods of ns.
func inNamespace(pods []corev1.Pod, ns string) []corev1.Pod {
	var in []corev1.Pod
	for _, p := range pods {
		if p.Namespace == ns {
			in = append(in, p)
		}
	}
	return in
}
