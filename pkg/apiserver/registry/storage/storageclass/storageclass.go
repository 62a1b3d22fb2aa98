// Package storageclass is the registry of storage.k8s.io/v1 StorageClasses: their defaults,
// validation, strategy, table and storage. A StorageClass names the provisioner that makes
// volumes for the claims of that class, with its parameters; all but metadata and
// allowVolumeExpansion (and mountOptions, allowedTopologies) are fixed at creation.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/storage.k8s.io/v1/storageclasses.
package storageclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Annotations that mark the default class, which claims naming none get.
const (
	IsDefaultAnnotation     = "storageclass.kubernetes.io/is-default-class"
	BetaIsDefaultAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// NewREST returns the storageclasses endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       storagev1.Resource("storageclasses"),
		Singular:       "storageclass",
		New:            func() runtime.Object { return &storagev1.StorageClass{} },
		NewList:        func() runtime.Object { return &storagev1.StorageClassList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"sc"}}, nil
}

// SetDefaults: volumes of a class are deleted with their claim and bound at once, unless
// the class says otherwise.
func SetDefaults(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		p := corev1.PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &p
	}
	if sc.VolumeBindingMode == nil {
		m := storagev1.VolumeBindingImmediate
		sc.VolumeBindingMode = &m
	}
}

// IsDefault reports whether the class carries either default-class annotation.
func IsDefault(sc *storagev1.StorageClass) bool {
	return sc.Annotations[IsDefaultAnnotation] == "true" || sc.Annotations[BetaIsDefaultAnnotation] == "true"
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of StorageClasses.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateStorageClass(obj.(*storagev1.StorageClass))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	sc := obj.(*storagev1.StorageClass)
	return append(ValidateStorageClass(sc), ValidateStorageClassUpdate(sc, old.(*storagev1.StorageClass))...)
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return Warnings(obj.(*storagev1.StorageClass))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return Warnings(obj.(*storagev1.StorageClass))
}

// DeprecatedNodeLabels are the node labels upstream warns about in topologies and node
// selectors, with its word on each.
var DeprecatedNodeLabels = map[string]string{
	`beta.kubernetes.io/arch`:                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	`beta.kubernetes.io/os`:                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	`failure-domain.beta.kubernetes.io/region`:      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	`failure-domain.beta.kubernetes.io/zone`:        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	`beta.kubernetes.io/instance-type`:              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	`app.kubernetes.io/created-by`:                  `deprecated since v1.9`,
	`scheduler.alpha.kubernetes.io/preferAvoidPods`: `deprecated since v1.22; use Taints and Tolerations instead`,
	`node-role.kubernetes.io/master`:                `use "node-role.kubernetes.io/control-plane" instead`,
}

// Warnings are upstream's: deprecated node labels in allowedTopologies.
func Warnings(sc *storagev1.StorageClass) []string {
	var warnings []string
	for i, term := range sc.AllowedTopologies {
		for j, expr := range term.MatchLabelExpressions {
			if msg, ok := DeprecatedNodeLabels[expr.Key]; ok {
				p := field.NewPath("allowedTopologies").Index(i).Child("matchLabelExpressions").Index(j).Child("key")
				warnings = append(warnings, fmt.Sprintf("%s: %s", p, msg))
			}
		}
	}
	return warnings
}

// Fields are the fields StorageClasses can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*storagev1.StorageClass).ObjectMeta, false)
}
