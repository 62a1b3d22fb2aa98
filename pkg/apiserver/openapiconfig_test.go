package apiserver

import (
	"testing"

	"github.com/emicklei/go-restful/v3"

	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
)

// TestOpenAPIOperationIDs: the configurations come with the route naming the builders would
// otherwise install themselves (in a closure that keeps their first build for the server's
// life), and it names routes as the generic server's GetOperationIDAndTags does.
func TestOpenAPIOperationIDs(t *testing.T) {
	var gc genericapiserver.Config
	applyOpenAPI(&gc)
	if gc.OpenAPIConfig.GetOperationIDAndTagsFromRoute == nil || gc.OpenAPIV3Config.GetOperationIDAndTagsFromRoute == nil {
		t.Fatal("applyOpenAPI left GetOperationIDAndTagsFromRoute to the OpenAPI builders")
	}
	ws := new(restful.WebService).Path("/apis/apps/v1")
	ws.Route(ws.GET("/namespaces/{namespace}/deployments/{name}").Operation("readAppsV1NamespacedDeployment").
		Metadata("x-kubernetes-group-version-kind", nil).To(func(*restful.Request, *restful.Response) {}))
	route := &ws.Routes()[0]
	wantID, wantTags, err := openapinamer.GetOperationIDAndTags(route)
	if err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func() (string, []string, error){
		"v2": func() (string, []string, error) {
			return gc.OpenAPIConfig.GetOperationIDAndTagsFromRoute(&restfuladapter.RouteAdapter{Route: route})
		},
		"v3": func() (string, []string, error) {
			return gc.OpenAPIV3Config.GetOperationIDAndTagsFromRoute(&restfuladapter.RouteAdapter{Route: route})
		},
	} {
		id, tags, err := get()
		if err != nil || id != wantID || len(tags) != len(wantTags) || (len(tags) > 0 && tags[0] != wantTags[0]) {
			t.Errorf("%s: %q %v %v, want %q %v", name, id, tags, err, wantID, wantTags)
		}
	}
}
