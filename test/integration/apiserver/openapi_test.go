package apiserver

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestOpenAPI reads the documents the API server builds at their first request: the v3
// index and a group's document under concurrent first requests, the v2 document as JSON and
// protobuf, kubectl explain on them, and who may read them (system:discovery: every
// authenticated user; without credentials, nobody).
func TestOpenAPI(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	raw := c.Client.CoreV1().RESTClient()

	// Eight first requests at once: each gets the whole index, the same one.
	var wg sync.WaitGroup
	bodies := make([][]byte, 8)
	errs := make([]error, 8)
	for i := range bodies {
		wg.Go(func() { bodies[i], errs[i] = raw.Get().AbsPath("/openapi/v3").DoRaw(ctx) })
	}
	wg.Wait()
	for i := range bodies {
		if errs[i] != nil {
			t.Fatalf("GET /openapi/v3: %v", errs[i])
		}
		if string(bodies[i]) != string(bodies[0]) {
			t.Fatalf("concurrent first requests got different indexes:\n%s\n%s", bodies[0], bodies[i])
		}
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(bodies[0], &index); err != nil {
		t.Fatalf("the v3 index: %v", err)
	}
	for _, gv := range []string{"api/v1", "apis/rbac.authorization.k8s.io/v1", "apis/authorization.k8s.io/v1", "apis/coordination.k8s.io/v1"} {
		if index.Paths[gv].ServerRelativeURL == "" {
			t.Errorf("the v3 index has no %s: %s", gv, bodies[0])
		}
	}

	core, err := raw.Get().AbsPath(strings.Split(index.Paths["api/v1"].ServerRelativeURL, "?")[0]).
		Param("hash", strings.SplitN(index.Paths["api/v1"].ServerRelativeURL, "hash=", 2)[1]).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET the api/v1 document: %v", err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				GVK []map[string]string `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(core, &doc); err != nil {
		t.Fatalf("the api/v1 document: %v", err)
	}
	if gvk := doc.Components.Schemas["io.k8s.api.core.v1.Pod"].GVK; len(gvk) != 1 || gvk[0]["kind"] != "Pod" || gvk[0]["version"] != "v1" {
		t.Errorf("api/v1's Pod schema has group-version-kinds %v", gvk)
	}

	v2, err := raw.Get().AbsPath("/openapi/v2").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /openapi/v2: %v", err)
	}
	var swagger struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
		Paths       map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(v2, &swagger); err != nil {
		t.Fatalf("the v2 document: %v", err)
	}
	if swagger.Definitions["io.k8s.api.rbac.v1.ClusterRole"] == nil || swagger.Paths["/api/v1/namespaces/{namespace}/pods"] == nil {
		t.Errorf("the v2 document lacks ClusterRole or the pods path (%d definitions, %d paths)", len(swagger.Definitions), len(swagger.Paths))
	}
	proto, err := raw.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf").DoRaw(ctx)
	if err != nil || len(proto) == 0 || proto[0] == '{' {
		t.Errorf("the v2 document as protobuf: %d bytes, %v", len(proto), err)
	}

	// kubectl explain reads the v3 documents.
	user := newRBACUser(t, c, "openapi-reader")
	out, err := kubectlAs(t, ctx, user.kubeconfig, "explain", "pods.spec.serviceAccountName")
	if err != nil || !strings.Contains(out, "ServiceAccountName is the name of the ServiceAccount") {
		t.Errorf("kubectl explain pods.spec.serviceAccountName as an unbound user: %v\n%s", err, out)
	}

	anonymous, err := kubernetes.NewForConfig(rest.AnonymousClientConfig(c.Config))
	if err != nil {
		t.Fatal(err)
	}
	_, err = anonymous.CoreV1().RESTClient().Get().AbsPath("/openapi/v2").DoRaw(ctx)
	// berth authenticates anonymous requests on the public paths only (health, version,
	// discovery of the OpenID issuer); a document of the API is not one of them.
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("GET /openapi/v2 without credentials: %v, want 401", err)
	}
}
