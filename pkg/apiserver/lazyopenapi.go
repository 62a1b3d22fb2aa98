package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emicklei/go-restful/v3"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// installLazyOpenAPI serves /openapi/v2 and /openapi/v3 with the generic server's own handlers
// (routes.OpenAPI), but builds each document at its first request rather than at start, as
// the generic server does when it is not told to skip it (Config.SkipOpenAPIInstallation).
//
// The built documents are the largest thing the API server keeps (some 6 MB with the types
// berth serves, twice that in RSS under the GC's headroom), and most of berth's clients never
// ask for them: the node agent, the scheduler, the controllers and client-go programs read
// discovery only; kubectl asks for them in apply, explain and edit, helm in install. Once
// built, a document is kept, as upstream keeps it.
//
// The server-side apply models need the definitions while the APIs are installed; after that
// the v3 configuration keeps none (the definitions map is another 3 MB), and a build makes
// its own.
func installLazyOpenAPI(gs *genericapiserver.GenericAPIServer, v2 *openapicommon.Config, v3 *openapicommon.OpenAPIV3Config) {
	container := gs.Handler.GoRestfulContainer
	v3.Definitions = nil

	v2Handler := lazily("openapi-v2", func(m *mux.PathRecorderMux) { routes.OpenAPI{Config: v2}.InstallV2(container, m) })
	v3Handler := lazily("openapi-v3", func(m *mux.PathRecorderMux) {
		// One definitions map for every group's document, as DefaultOpenAPIV3Config makes
		// it, dropped with this copy of the configuration once they are built.
		build := *v3
		build.Definitions = v3.GetDefinitions(func(name string) spec.Ref {
			defName, _ := v3.GetDefinitionName(name)
			return spec.MustCreateRef("#/components/schemas/" + openapicommon.EscapeJsonPointer(defName))
		})
		routes.OpenAPI{V3Config: &build}.InstallV3(container, m)
	})
	gs.Handler.NonGoRestfulMux.Handle("/openapi/v2", v2Handler)
	gs.Handler.NonGoRestfulMux.Handle("/openapi/v3", unbuiltV3Index(container, v3Handler))
	gs.Handler.NonGoRestfulMux.HandlePrefix("/openapi/v3/", v3Handler)
}

// lazyHandler serves the handlers install registers on a mux of its own, calling install at
// the first request; requests that come meanwhile wait for it.
type lazyHandler struct {
	once  sync.Once
	built atomic.Bool
	mux   *mux.PathRecorderMux
	build func(*mux.PathRecorderMux)
}

func lazily(name string, install func(*mux.PathRecorderMux)) *lazyHandler {
	return &lazyHandler{mux: mux.NewPathRecorderMux(name), build: install}
}

func (h *lazyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(func() {
		h.build(h.mux)
		h.built.Store(true)
	})
	h.mux.ServeHTTP(w, r)
}

// unbuiltV3Index answers /openapi/v3, the index of the v3 documents, without building them
// while none was asked for. The aggregator in front of the chain reads every server's index
// at start and once a minute to learn which group versions it serves, and the index names
// each document by a hash of its content, which only the build can tell; so until a
// document is asked for, the index names each one with a placeholder hash, unique to this
// process. A client that follows it gets the document (the build happens then) through
// OpenAPI v3's redirect to the document's real hash, and the aggregator's next read of the
// index has the real hashes.
func unbuiltV3Index(container *restful.Container, v3 *lazyHandler) http.Handler {
	placeholder := fmt.Sprintf("unbuilt-%d", time.Now().UnixNano())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v3.built.Load() {
			v3.ServeHTTP(w, r)
			return
		}
		index := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
		for _, ws := range container.RegisteredWebServices() {
			gv := strings.TrimPrefix(ws.RootPath(), "/")
			if gv == "version" {
				// Every server of the chain serves /version, with the same document: the
				// aggregator takes any one's entry, so a placeholder here would make its
				// index change from one request to the next.
				continue
			}
			index.Paths[gv] = handler3.OpenAPIV3DiscoveryGroupVersion{
				ServerRelativeURL: "/openapi/v3/" + gv + "?hash=" + placeholder,
			}
		}
		body, err := json.Marshal(index)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}
