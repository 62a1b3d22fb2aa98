package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// TestServerSideApply: two managers' fields merge; a field both set is a conflict unless
// forced; managedFields record who owns what.
func TestServerSideApply(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	cms := c.Client.CoreV1().ConfigMaps(ns)

	_, err := cms.Apply(ctx, corev1apply.ConfigMap("ssa", ns).WithData(map[string]string{"a": "1", "shared": "alice"}),
		metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("alice's apply: %v", err)
	}
	cm, err := cms.Apply(ctx, corev1apply.ConfigMap("ssa", ns).WithData(map[string]string{"b": "2"}),
		metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatalf("bob's apply: %v", err)
	}
	if cm.Data["a"] != "1" || cm.Data["b"] != "2" || cm.Data["shared"] != "alice" {
		t.Errorf("merged data = %v, want a, b and shared", cm.Data)
	}
	managers := map[string]bool{}
	for _, m := range cm.ManagedFields {
		managers[m.Manager] = true
	}
	if !managers["alice"] || !managers["bob"] {
		t.Errorf("managedFields name %v, want alice and bob", managers)
	}

	_, err = cms.Apply(ctx, corev1apply.ConfigMap("ssa", ns).WithData(map[string]string{"b": "2", "shared": "bob"}),
		metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) || !contains(err.Error(), `conflict with "alice"`) {
		t.Fatalf("bob applying alice's field: %v, want a conflict with alice", err)
	}
	cm, err = cms.Apply(ctx, corev1apply.ConfigMap("ssa", ns).WithData(map[string]string{"b": "2", "shared": "bob"}),
		metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if cm.Data["shared"] != "bob" {
		t.Errorf("after the forced apply shared = %q, want bob", cm.Data["shared"])
	}

	// Applying to a pod: the type converter knows the pod schema (lists keyed by name).
	podApply := corev1apply.Pod("ssa-pod", ns).WithSpec(corev1apply.PodSpec().
		WithContainers(corev1apply.Container().WithName("c").WithImage("busybox:1.36")))
	if _, err := c.Client.CoreV1().Pods(ns).Apply(ctx, podApply, metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatalf("applying a pod: %v", err)
	}
	pod, err := c.Client.CoreV1().Pods(ns).Patch(ctx, "ssa-pod", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ssa-pod","labels":{"x":"y"}}}`),
		metav1.PatchOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatalf("raw apply patch: %v", err)
	}
	if pod.Labels["x"] != "y" || pod.Spec.Containers[0].Image != "busybox:1.36" {
		t.Errorf("pod after the second apply: labels %v image %s", pod.Labels, pod.Spec.Containers[0].Image)
	}
}

// TestProtobuf: a client speaking protobuf creates, reads and lists.
func TestProtobuf(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	client := kubernetes.NewForConfigOrDie(c.ProtobufConfig())
	if _, err := client.CoreV1().Pods(ns).Create(ctx, simplePod("proto"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create over protobuf: %v", err)
	}
	pod, err := client.CoreV1().Pods(ns).Get(ctx, "proto", metav1.GetOptions{})
	if err != nil || pod.Spec.Containers[0].Image != "busybox:1.36" {
		t.Fatalf("get over protobuf: %v %v", pod, err)
	}
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=test"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list over protobuf: %v items, %v", len(list.Items), err)
	}
	// The response really was protobuf.
	res := client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("proto").Do(ctx)
	var ct string
	res.ContentType(&ct)
	if ct != "application/vnd.kubernetes.protobuf" {
		t.Errorf("response content type %q, want protobuf", ct)
	}
	_ = corev1.Pod{}
}

// TestPagination: limit and continue page through a list.
func TestPagination(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	for i := 0; i < 7; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "page-", Labels: map[string]string{"paged": "yes"}}}
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	// Selected: the namespace also holds the root CA publisher's kube-root-ca.crt.
	opts := metav1.ListOptions{Limit: 3, LabelSelector: "paged=yes"}
	pages := 0
	for {
		list, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(list.Items) > 3 {
			t.Fatalf("page of %d items with limit 3", len(list.Items))
		}
		for _, cm := range list.Items {
			seen[cm.Name] = true
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if len(seen) != 7 || pages != 3 {
		t.Errorf("saw %d config maps in %d pages, want 7 in 3", len(seen), pages)
	}
}
