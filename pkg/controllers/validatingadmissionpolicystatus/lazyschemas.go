package validatingadmissionpolicystatus

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// LazySchemaResolver builds its resolver at the first type check rather than when the
// controller is built. The resolver of the built-in types holds every OpenAPI definition
// the server has (some 4 MB, twice that in RSS under the GC's headroom), and most clusters
// never create a ValidatingAdmissionPolicy for it to check.
func LazySchemaResolver(build func() resolver.SchemaResolver) resolver.SchemaResolver {
	return &lazySchemaResolver{build: sync.OnceValue(build)}
}

type lazySchemaResolver struct {
	build func() resolver.SchemaResolver
}

func (l *lazySchemaResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	return l.build().ResolveSchema(gvk)
}
