// Package volumeattachment is the registry of storage.k8s.io/v1 VolumeAttachments: their
// validation, strategy, table and storage, and the status subresource. A VolumeAttachment
// asks a CSI driver's attacher to attach a volume to a node; the attacher reports the
// outcome in status. The spec is fixed at creation.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/storage.k8s.io/v1/volumeattachments and volumeattachments/status.
package volumeattachment

import (
	"context"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage holds the endpoints of VolumeAttachments.
type Storage struct {
	VolumeAttachment *registry.Resource
	Status           *registry.SubresourceREST
}

// NewStorage returns the volumeattachments and volumeattachments/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       storagev1.Resource("volumeattachments"),
		Singular:       "volumeattachment",
		New:            func() runtime.Object { return &storagev1.VolumeAttachment{} },
		NewList:        func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		VolumeAttachment: &registry.Resource{Store: store},
		Status:           registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of VolumeAttachments. The main
// resource never writes status; an update must name the version it changes.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*storagev1.VolumeAttachment).Status = old.(*storagev1.VolumeAttachment).Status
}

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateVolumeAttachment(obj.(*storagev1.VolumeAttachment))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateVolumeAttachmentUpdate(obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(storagev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of volumeattachments/status: only status changes,
// and the metadata a status writer has no business with stays as stored. Error codes are
// kept (MutableCSINodeAllocatableCount is on, locked, in 1.37).
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	va, oldVA := obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment)
	va.Spec = oldVA.Spec
	metav1.ResetObjectMetaForStatus(&va.ObjectMeta, &oldVA.ObjectMeta)
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(storagev1.SchemeGroupVersion, "metadata", "spec")
}

// Fields are the fields VolumeAttachments can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*storagev1.VolumeAttachment).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get volumeattachments`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*storagev1.VolumeAttachment] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		table.AgeColumn(),
	}, func(va *storagev1.VolumeAttachment, now time.Time) metav1.TableRow {
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return metav1.TableRow{Cells: []any{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, table.Age(va, now)}}
	})
}
