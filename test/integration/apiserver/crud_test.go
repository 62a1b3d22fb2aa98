package apiserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// crudCase is one resource and a valid object of it.
type crudCase struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	object     string // JSON, without apiVersion/kind/name
	kind       string
}

var crudCases = []crudCase{
	{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true, `{"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, "Pod"},
	{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true, `{"data":{"k":"v"}}`, "ConfigMap"},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true, `{"stringData":{"k":"v"}}`, "Secret"},
	{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true, `{}`, "ServiceAccount"},
	{schema.GroupVersionResource{Version: "v1", Resource: "events"}, true, `{"involvedObject":{"kind":"Pod","name":"p","namespace":"NAMESPACE"},"reason":"Tested","message":"m","type":"Normal"}`, "Event"},
	{schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, true, `{"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"berth.dev/test","reportingInstance":"test-1","action":"Testing","reason":"Tested","type":"Normal","regarding":{"kind":"Pod","name":"p","namespace":"NAMESPACE"},"note":"n"}`, "Event"},
	{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, true, `{"spec":{"holderIdentity":"h","leaseDurationSeconds":40}}`, "Lease"},
	{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, false, `{"spec":{"podCIDR":"10.244.9.0/24"}}`, "Node"},
	{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false, `{}`, "Namespace"},
	{schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}, false, `{"value":1000,"description":"d"}`, "PriorityClass"},
}

// TestCRUD creates, reads, lists, updates, patches and deletes an object of every resource.
func TestCRUD(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	client := dynamic.NewForConfigOrDie(c.Config)
	ns := newNamespace(t, ctx, c.Client)
	for _, tc := range crudCases {
		t.Run(tc.gvr.String(), func(t *testing.T) {
			name := "crud-" + tc.gvr.Resource
			obj := &unstructured.Unstructured{}
			raw := []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q}}`, tc.gvr.GroupVersion().String(), tc.kind, name))
			if err := json.Unmarshal(raw, &obj.Object); err != nil {
				t.Fatal(err)
			}
			body := map[string]interface{}{}
			if err := json.Unmarshal([]byte(strings.ReplaceAll(tc.object, "NAMESPACE", ns)), &body); err != nil {
				t.Fatal(err)
			}
			for k, v := range body {
				obj.Object[k] = v
			}
			var r dynamic.ResourceInterface = client.Resource(tc.gvr)
			if tc.namespaced {
				r = client.Resource(tc.gvr).Namespace(ns)
			}

			created, err := r.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetCreationTimestamp().Time.IsZero() {
				t.Errorf("create returned no uid, resourceVersion or creationTimestamp: %v", created.Object["metadata"])
			}

			got, err := r.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.GetUID() != created.GetUID() {
				t.Errorf("get returned uid %s, want %s", got.GetUID(), created.GetUID())
			}

			list, err := r.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(list.Items) != 1 || list.Items[0].GetName() != name {
				t.Errorf("list by name returned %d items", len(list.Items))
			}

			got.SetLabels(map[string]string{"updated": "yes"})
			updated, err := r.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if updated.GetLabels()["updated"] != "yes" || updated.GetResourceVersion() == got.GetResourceVersion() {
				t.Errorf("update did not take: labels %v, rv %s → %s", updated.GetLabels(), got.GetResourceVersion(), updated.GetResourceVersion())
			}
			// A stale resourceVersion is a conflict.
			if _, err := r.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				t.Errorf("update with a stale resourceVersion: got %v, want a conflict", err)
			}

			patched, err := r.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"patched":"yes"}}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("merge patch: %v", err)
			}
			if patched.GetAnnotations()["patched"] != "yes" || patched.GetLabels()["updated"] != "yes" {
				t.Errorf("merge patch: annotations %v labels %v", patched.GetAnnotations(), patched.GetLabels())
			}
			patched, err = r.Patch(ctx, name, types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/labels/json","value":"yes"}]`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("json patch: %v", err)
			}
			if patched.GetLabels()["json"] != "yes" {
				t.Errorf("json patch: labels %v", patched.GetLabels())
			}
			patched, err = r.Patch(ctx, name, types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"smp":"yes"}}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("strategic merge patch: %v", err)
			}
			if patched.GetLabels()["smp"] != "yes" || patched.GetLabels()["json"] != "yes" {
				t.Errorf("strategic merge patch: labels %v", patched.GetLabels())
			}

			if err := r.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if tc.gvr.Resource == "namespaces" {
				return // its deletion goes through the controller: TestNamespaceDeletion
			}
			if _, err := r.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: %v, want not found", err)
			}
		})
	}
}
