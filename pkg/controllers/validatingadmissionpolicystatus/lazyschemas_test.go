package validatingadmissionpolicystatus

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

type countingResolver struct{ calls int }

func (c *countingResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	c.calls++
	if gvk.Kind == "Missing" {
		return nil, resolver.ErrSchemaNotFound
	}
	return &spec.Schema{}, nil
}

func TestLazySchemaResolver(t *testing.T) {
	builds := 0
	inner := &countingResolver{}
	lazy := LazySchemaResolver(func() resolver.SchemaResolver {
		builds++
		return inner
	})
	if builds != 0 {
		t.Fatalf("built %d times before the first type check, want 0", builds)
	}
	if _, err := lazy.ResolveSchema(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}); err != nil {
		t.Fatalf("ResolveSchema: %v", err)
	}
	if _, err := lazy.ResolveSchema(schema.GroupVersionKind{Version: "v1", Kind: "Missing"}); !errors.Is(err, resolver.ErrSchemaNotFound) {
		t.Fatalf("ResolveSchema of a missing kind: %v, want ErrSchemaNotFound", err)
	}
	if builds != 1 || inner.calls != 2 {
		t.Fatalf("built %d times, resolved %d times; want 1 and 2", builds, inner.calls)
	}
}
