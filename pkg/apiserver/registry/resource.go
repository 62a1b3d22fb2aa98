package registry

import (
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Resource is a resource's main REST endpoint: its store, plus the short names and categories
// that discovery publishes (kubectl resolves "po", "cm" and "get all" through them).
type Resource struct {
	*genericregistry.Store
	Short        []string
	InCategories []string
}

var (
	_ rest.ShortNamesProvider = &Resource{}
	_ rest.CategoriesProvider = &Resource{}
)

// ShortNames implements rest.ShortNamesProvider.
func (r *Resource) ShortNames() []string { return r.Short }

// Categories implements rest.CategoriesProvider.
func (r *Resource) Categories() []string { return r.InCategories }
