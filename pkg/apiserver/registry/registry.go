// Package registry holds what the registries of all resources share: the base of a strategy
// (the "default → validate" part of a request's path that the generic store calls), the status
// subresource, field selectors, and the construction of a store on etcd behind the watch cache.
//
// Each resource has its own package below this one (core/pod, core/node, ...) with its strategy,
// its validation and defaults, its table columns and its storage.
package registry

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
)

// Strategy is the base every resource's strategy embeds: it types objects with berth's scheme,
// generates names for generateName, and says "nothing to do" for the optional steps.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// Base is the Strategy to embed.
var Base = Strategy{ObjectTyper: scheme.Scheme, NameGenerator: names.SimpleNameGenerator}

func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
func (Strategy) Canonicalize(runtime.Object)                   {}
func (Strategy) AllowCreateOnUpdate(context.Context) bool      { return false }
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// ResetFields returns, for one API version, the field paths (dotted, "metadata.ownerReferences")
// that a write through an endpoint must not change (status for the main resource, spec for the
// status subresource), in the form server-side apply wants.
func ResetFields(gv schema.GroupVersion, paths ...string) map[fieldpath.APIVersion]*fieldpath.Set {
	set := fieldpath.NewSet()
	for _, p := range paths {
		var parts []interface{}
		for _, part := range strings.Split(p, ".") {
			parts = append(parts, part)
		}
		set.Insert(fieldpath.MakePathOrDie(parts...))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(gv.String()): set}
}

// CreateUpdateDeleteStrategy is what a resource's strategy implements.
type CreateUpdateDeleteStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
	rest.RESTDeleteStrategy
}

// Selectable is a resource's set of fields that field selectors may name, with their values
// for one object. Called with a zero object it must still return every key: the scheme's
// field-label conversion learns the supported labels from it.
type Selectable func(obj runtime.Object) fields.Set

// StoreConfig describes one resource's store.
type StoreConfig struct {
	Resource       schema.GroupResource // plural, e.g. {"", "pods"}
	Singular       string
	New            func() runtime.Object
	NewList        func() runtime.Object
	Strategy       CreateUpdateDeleteStrategy
	Fields         Selectable
	TableConvertor rest.TableConvertor
	// Indexed fields get an index in the watch cache, so that a watch with a field selector on
	// them (a node agent's spec.nodeName=<node>) is served without scanning every object.
	Indexed map[string]func(obj runtime.Object) string
	TTL     func(obj runtime.Object, existing uint64, update bool) (uint64, error)
}

// NewStore builds a generic store on the storage getter gives (etcd behind the watch cache).
func NewStore(getter generic.RESTOptionsGetter, c StoreConfig) (*genericregistry.Store, error) {
	store := &genericregistry.Store{
		NewFunc:                   c.New,
		NewListFunc:               c.NewList,
		DefaultQualifiedResource:  c.Resource,
		SingularQualifiedResource: schema.GroupResource{Group: c.Resource.Group, Resource: c.Singular},
		PredicateFunc:             predicate(c.Fields),
		CreateStrategy:            c.Strategy,
		UpdateStrategy:            c.Strategy,
		DeleteStrategy:            c.Strategy,
		TableConvertor:            c.TableConvertor,
		TTLFunc:                   c.TTL,
	}
	if rs, ok := c.Strategy.(rest.ResetFieldsStrategy); ok {
		store.ResetFieldsStrategy = rs
	}
	options := &generic.StoreOptions{RESTOptions: getter, AttrFunc: attrs(c.Fields)}
	if len(c.Indexed) > 0 {
		options.TriggerFunc = storage.IndexerFuncs{}
		indexers := cache.Indexers{}
		for name, fn := range c.Indexed {
			options.TriggerFunc[name] = fn
			indexers[storage.FieldIndex(name)] = func(obj interface{}) ([]string, error) {
				o, ok := obj.(runtime.Object)
				if !ok {
					return nil, fmt.Errorf("not a runtime.Object: %T", obj)
				}
				return []string{fn(o)}, nil
			}
		}
		options.Indexers = &indexers
	}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, fmt.Errorf("completing the %s store: %w", c.Resource, err)
	}
	store.Storage.Storage = clientErrorStorage{store.Storage.Storage}
	return store, nil
}

func attrs(selectable Selectable) storage.AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, err
		}
		return labels.Set(m.GetLabels()), selectable(obj), nil
	}
}

func predicate(selectable Selectable) func(labels.Selector, fields.Selector) storage.SelectionPredicate {
	return func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
		p := storage.SelectionPredicate{Label: label, Field: field, GetAttrs: attrs(selectable)}
		return p
	}
}

// FieldLabelConversion returns the scheme's field-label conversion function for a resource: it
// accepts exactly the labels the resource's field set has, and names the others in
// Kubernetes' words.
func FieldLabelConversion(selectable Selectable, zero runtime.Object) runtime.FieldLabelConversionFunc {
	supported := selectable(zero)
	return func(label, value string) (string, string, error) {
		if _, ok := supported[label]; ok {
			return label, value, nil
		}
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
}

// ValidateNothing is for resources whose field errors come only from ObjectMeta.
func ValidateNothing(runtime.Object) field.ErrorList { return nil }
