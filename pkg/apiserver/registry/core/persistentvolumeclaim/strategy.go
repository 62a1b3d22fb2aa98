package persistentvolumeclaim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of claims: the status is the binder's
// (a new claim starts Pending), the spec the user's.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// PrepareForCreate clears the status (the defaults on the way back make it Pending) and
// settles the data sources.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	c := obj.(*corev1.PersistentVolumeClaim)
	c.Status = corev1.PersistentVolumeClaimStatus{}
	dropLegacyDataSource(&c.Spec, nil)
	normalizeDataSources(&c.Spec)
}

// PrepareForUpdate keeps the status and settles the data sources of both versions, so that a
// claim stored with only dataSource compares equal to itself written back with both.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	c, o := obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim)
	c.Status = o.Status
	dropLegacyDataSource(&c.Spec, &o.Spec)
	normalizeDataSources(&c.Spec)
	normalizeDataSources(&o.Spec)
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidatePersistentVolumeClaim(obj.(*corev1.PersistentVolumeClaim), OptionsFor(nil))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	o := old.(*corev1.PersistentVolumeClaim)
	return ValidatePersistentVolumeClaimUpdate(obj.(*corev1.PersistentVolumeClaim), o, OptionsFor(o))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return Warnings(obj.(*corev1.PersistentVolumeClaim))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return Warnings(obj.(*corev1.PersistentVolumeClaim))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of persistentvolumeclaims/status, which keeps the spec.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.PersistentVolumeClaim).Spec = old.(*corev1.PersistentVolumeClaim).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidatePersistentVolumeClaimStatusUpdate(obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec")
}

// Fields are the fields claims can be selected by: metadata, and "name", which upstream
// keeps for old clients.
func Fields(obj runtime.Object) fields.Set {
	c := obj.(*corev1.PersistentVolumeClaim)
	set := generic.ObjectMetaFieldsSet(&c.ObjectMeta, true)
	set["name"] = c.Name
	return set
}

// dropLegacyDataSource keeps the old contract of dataSource (KEP 1495): from a client that
// sets only dataSource, anything but a claim or a VolumeSnapshot is ignored, as if an empty
// volume were asked for, unless the stored claim had a data source already.
func dropLegacyDataSource(spec, old *corev1.PersistentVolumeClaimSpec) {
	if old != nil && (old.DataSource != nil || old.DataSourceRef != nil) {
		return
	}
	if spec.DataSourceRef != nil || spec.DataSource == nil {
		return
	}
	group := ""
	if spec.DataSource.APIGroup != nil {
		group = *spec.DataSource.APIGroup
	}
	claim := spec.DataSource.Kind == "PersistentVolumeClaim" && group == ""
	snapshot := spec.DataSource.Kind == "VolumeSnapshot" && group == "snapshot.storage.k8s.io"
	if !claim && !snapshot {
		spec.DataSource = nil
	}
}

// normalizeDataSources copies dataSource into dataSourceRef, or back, when only one is set
// (a reference to another namespace has no dataSource form).
func normalizeDataSources(spec *corev1.PersistentVolumeClaimSpec) {
	switch ds, ref := spec.DataSource, spec.DataSourceRef; {
	case ds != nil && ref == nil:
		spec.DataSourceRef = &corev1.TypedObjectReference{Kind: ds.Kind, Name: ds.Name, APIGroup: copyString(ds.APIGroup)}
	case ref != nil && ds == nil && (ref.Namespace == nil || *ref.Namespace == ""):
		spec.DataSource = &corev1.TypedLocalObjectReference{Kind: ref.Kind, Name: ref.Name, APIGroup: copyString(ref.APIGroup)}
	}
}

func copyString(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}

// defaultOnRead fills in dataSourceRef of claims stored before it existed.
func defaultOnRead(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		normalizeDataSources(&o.Spec)
	case *corev1.PersistentVolumeClaimList:
		for i := range o.Items {
			normalizeDataSources(&o.Items[i].Spec)
		}
	}
}

// Warnings are upstream's warnings of a claim: the deprecated storage-class annotation and a
// storage request or limit in fractions of a byte.
func Warnings(c *corev1.PersistentVolumeClaim) []string {
	var warnings []string
	if _, ok := c.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		warnings = append(warnings, fmt.Sprintf("%s: %s",
			field.NewPath("metadata", "annotations").Key(corev1.BetaStorageClassAnnotation), deprecatedStorageClassMsg))
	}
	return append(warnings, SpecWarnings(field.NewPath("spec"), &c.Spec)...)
}

// deprecatedStorageClassMsg is upstream's word on the beta storage-class annotation, on
// claims and volumes.
const deprecatedStorageClassMsg = `deprecated since v1.8; use "storageClassName" attribute instead`

// SpecWarnings are the warnings of a claim spec at fldPath: a storage request or limit that is
// not a whole number of bytes.
func SpecWarnings(fldPath *field.Path, spec *corev1.PersistentVolumeClaimSpec) []string {
	var warnings []string
	for _, l := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", spec.Resources.Requests}, {"limits", spec.Resources.Limits}} {
		q := l.list[corev1.ResourceStorage]
		if q.MilliValue()%1000 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer",
				fldPath.Child("resources", l.name).Key(string(corev1.ResourceStorage)), q.String()))
		}
	}
	return warnings
}
