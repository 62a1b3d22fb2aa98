package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// TestStrategicPatchCheck: patches the merge cannot compare are refused before they reach it;
// the rest pass on untouched, body included.
func TestStrategicPatchCheck(t *testing.T) {
	for _, tc := range []struct {
		name, resource, subresource, body string
		refused                           string // in the 400's message; "" passes
	}{
		{name: "node address type is an object", resource: "nodes", subresource: "status",
			body: `{"status":{"addresses":[{"type":{},"address":"x"}]}}`, refused: "status.addresses[0].type: the merge key must be"},
		{name: "container name is a list", resource: "pods",
			body: `{"spec":{"containers":[{"name":["c"],"image":"i"}]}}`, refused: "spec.containers[0].name: the merge key must be"},
		{name: "nested: a port of a container", resource: "pods",
			body: `{"spec":{"containers":[{"name":"c","ports":[{"containerPort":{"a":1}}]}]}}`, refused: "spec.containers[0].ports[0].containerPort"},
		{name: "element order of objects", resource: "pods",
			body: `{"spec":{"$setElementOrder/containers":[{"name":{}}],"containers":[{"name":"c"}]}}`, refused: "spec.containers[0].name"},
		{name: "element order of a primitive list", resource: "pods",
			body: `{"metadata":{"$setElementOrder/finalizers":[["a"]]}}`, refused: "metadata.$setElementOrder/finalizers[0]: must be an object or a scalar"},
		{name: "a valid patch", resource: "pods",
			body: `{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"j","env":[{"name":"X","value":"1"}]}],"$setElementOrder/containers":[{"name":"c"}]}}`},
		{name: "labels are a map, not a list", resource: "nodes", body: `{"metadata":{"labels":{"type":"x"}}}`},
		{name: "not JSON: the handler says so", resource: "pods", body: `{"spec":`},
		{name: "unknown resource", resource: "widgets", body: `{"spec":{"containers":[{"name":{}}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = string(b)
				w.WriteHeader(http.StatusOK)
			})
			req := httptest.NewRequest(http.MethodPatch, "/api/v1/"+tc.resource+"/x", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
			req = req.WithContext(request.WithRequestInfo(req.Context(), &request.RequestInfo{
				IsResourceRequest: true, Verb: "patch", APIVersion: "v1", Resource: tc.resource, Subresource: tc.subresource, Name: "x"}))
			rec := httptest.NewRecorder()
			withStrategicPatchCheck(next).ServeHTTP(rec, req)
			if tc.refused == "" {
				if rec.Code != http.StatusOK || got != tc.body {
					t.Errorf("got %d, body passed on %q; want 200 and the body untouched", rec.Code, got)
				}
				return
			}
			var status struct {
				Code    int
				Reason  string
				Message string
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &status)
			if rec.Code != http.StatusBadRequest || status.Reason != "BadRequest" || !strings.Contains(status.Message, tc.refused) {
				t.Errorf("got %d %s %q, want 400 BadRequest naming %q", rec.Code, status.Reason, status.Message, tc.refused)
			}
		})
	}
}

// TestStrategicPatchPanicsWithoutTheCheck shows what the check prevents: the merge itself
// panics on such a patch.
func TestStrategicPatchPanicsWithoutTheCheck(t *testing.T) {
	original := map[string]any{"status": map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": "192.0.2.1"}}}}
	patch := map[string]any{"status": map[string]any{"addresses": []any{map[string]any{"type": map[string]any{}}}}}
	defer func() {
		if recover() == nil {
			t.Error("strategicpatch merged the patch without panicking: withStrategicPatchCheck may no longer be needed")
		}
	}()
	_, _ = strategicpatch.StrategicMergeMapPatch(original, patch, &corev1.Node{})
}
