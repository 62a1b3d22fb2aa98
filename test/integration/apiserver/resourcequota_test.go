package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// waitQuota waits until the quota's status carries its spec's limits and used is want.
func waitQuota(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, name string, want corev1.ResourceList) {
	t.Helper()
	var last *corev1.ResourceQuota
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = q
		if len(q.Status.Hard) != len(q.Spec.Hard) || len(q.Status.Used) != len(want) {
			return false, nil
		}
		for k, v := range want {
			if used, ok := q.Status.Used[k]; !ok || used.Cmp(v) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("quota %s/%s: status %+v, want used %v: %v", ns, name, last.Status, want, err)
	}
}

// TestResourceQuota: the resource-quota controller fills in a quota's status; admission
// refuses a pod over it with Kubernetes' 403, and a pod without the limits a quota on
// limits.cpu requires; deleting a pod frees its share of the quota.
func TestResourceQuota(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	ns := newNamespace(t, ctx, c.Client)
	q := resource.MustParse
	pods := c.Client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, simplePod("first"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace's kube-root-ca.crt must exist before the quota: created while the
	// controller's first count is under way, it would be charged neither by admission (the
	// quota has no status yet) nor by that count, as in Kubernetes.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the namespace's kube-root-ca.crt: %v", err)
	}
	_, err = c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: q("1"), "count/configmaps": q("5")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The namespace's kube-root-ca.crt is a configmap too.
	waitQuota(t, ctx, c.Client, ns, "pods", corev1.ResourceList{corev1.ResourcePods: q("1"), "count/configmaps": q("1")})

	_, err = pods.Create(ctx, simplePod("second"), metav1.CreateOptions{})
	want := "exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("a pod over the quota: %v, want a 403 with %q", err, want)
	}

	if err := pods.Delete(ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, ctx, c.Client, ns, "pods", corev1.ResourceList{corev1.ResourcePods: q("0"), "count/configmaps": q("1")})
	if _, err := pods.Create(ctx, simplePod("second"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod after the first was deleted: %v", err)
	}
	// Admission charged it at once; the controller's count agrees.
	waitQuota(t, ctx, c.Client, ns, "pods", corev1.ResourceList{corev1.ResourcePods: q("1"), "count/configmaps": q("1")})

	// A quota on limits.cpu requires every container to state one.
	_, err = c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsCPU: q("1")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitQuota(t, ctx, c.Client, ns, "cpu", corev1.ResourceList{corev1.ResourceLimitsCPU: q("0")})
	if err := pods.Delete(ctx, "second", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, ctx, c.Client, ns, "pods", corev1.ResourceList{corev1.ResourcePods: q("0"), "count/configmaps": q("1")})
	_, err = pods.Create(ctx, simplePod("unlimited"), metav1.CreateOptions{})
	want = "failed quota: cpu: must specify limits.cpu for: c"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("a pod without a cpu limit: %v, want a 403 with %q", err, want)
	}
	limited := simplePod("limited")
	limited.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("500m")}
	if _, err := pods.Create(ctx, limited, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod with a cpu limit: %v", err)
	}
	waitQuota(t, ctx, c.Client, ns, "cpu", corev1.ResourceList{corev1.ResourceLimitsCPU: q("500m")})

	// A spec update keeps the status; invalid quotas are a 422 with upstream's words.
	quota, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quota.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
	_, err = c.Client.CoreV1().ResourceQuotas(ns).Update(ctx, quota, metav1.UpdateOptions{})
	if want := `spec.scopes: Invalid value: ["Terminating"]: field is immutable`; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("changing the scopes: %v, want a 422 with %q", err, want)
	}
}

// TestResourceQuotaCustomResource is the conformance test "ResourceQuota should create a
// ResourceQuota and capture the life of a custom resource": the resource-quota controller
// discovers a new CRD's resource (within its 30 s re-discovery) and counts it as
// count/<plural>.<group> through a metadata informer; admission charges a new custom
// resource and refuses one over the quota; deleting one frees its share.
func TestResourceQuotaCustomResource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sharedCluster(t)
	crds := apiextensionsclient.NewForConfigOrDie(c.Config).ApiextensionsV1().CustomResourceDefinitions()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.quota.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "quota.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}) })
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the CRD was not established: %v", err)
	}

	ns := newNamespace(t, ctx, c.Client)
	const count = corev1.ResourceName("count/widgets.quota.example.com")
	q := resource.MustParse
	_, err = c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{count: q("1")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The controller counts the resource once its re-discovery has found it and its monitor
	// has listed it: at most DiscoveryPeriod (30 s) and a list.
	var last corev1.ResourceQuotaStatus
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		quota, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "widgets", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = quota.Status
		_, counted := quota.Status.Used[count]
		return counted, nil
	})
	if err != nil {
		t.Fatalf("the controller never counted %s: status %+v: %v", count, last, err)
	}
	waitQuota(t, ctx, c.Client, ns, "widgets", corev1.ResourceList{count: q("0")})

	widgets := dynamic.NewForConfigOrDie(c.Config).Resource(schema.GroupVersionResource{Group: "quota.example.com", Version: "v1", Resource: "widgets"}).Namespace(ns)
	widget := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "quota.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": name}}}
	}
	if _, err := widgets.Create(ctx, widget("first"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a widget within the quota: %v", err)
	}
	waitQuota(t, ctx, c.Client, ns, "widgets", corev1.ResourceList{count: q("1")})

	_, err = widgets.Create(ctx, widget("second"), metav1.CreateOptions{})
	want := "exceeded quota: widgets, requested: count/widgets.quota.example.com=1, used: count/widgets.quota.example.com=1, limited: count/widgets.quota.example.com=1"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("a widget over the quota: %v, want a 403 with %q", err, want)
	}

	// Only the controller brings the usage back down, from the metadata informer's delete.
	if err := widgets.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, ctx, c.Client, ns, "widgets", corev1.ResourceList{count: q("0")})
	if _, err := widgets.Create(ctx, widget("second"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a widget after the first was deleted: %v", err)
	}
}
