package apiserver

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// crdListPath is where clients look for CustomResourceDefinitions. berth serves none and does
// not advertise the group, but kubectl lists this path to tell a built-in kind from a custom
// one before it validates a manifest of a kind that cannot be patched (Binding, Eviction);
// a 404 there makes `kubectl create -f` of such a manifest fail, so the path answers with the
// truth: an empty list.
const crdListPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

const emptyCRDList = `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"0"},"items":[]}`

func installEmptyCRDList(gs *genericapiserver.GenericAPIServer) {
	gs.Handler.NonGoRestfulMux.HandleFunc(crdListPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "CustomResourceDefinitions are not supported", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(emptyCRDList))
	})
}
