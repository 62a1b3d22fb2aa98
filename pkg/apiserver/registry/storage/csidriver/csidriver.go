// Package csidriver is the registry of storage.k8s.io/v1 CSIDrivers: their defaults,
// validation, strategy, table and storage. A CSIDriver tells the node agent and the
// attach/detach machinery how a CSI driver wants to be called (attach or not, pod info on
// mount, tokens, fsGroup handling, SELinux mounts).
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/storage.k8s.io/v1/csidrivers.
//
// The gates upstream consults stand as in Kubernetes 1.37: SELinuxMountReadWriteOncePod,
// MutableCSINodeAllocatableCount and CSIServiceAccountTokenSecrets on (GA, locked),
// VolumeLimitScaling on (beta). So every field is kept, and seLinuxMount and
// preventPodSchedulingIfMissing are defaulted and required.
package csidriver

import (
	"context"
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the csidrivers endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       storagev1.Resource("csidrivers"),
		Singular:       "csidriver",
		New:            func() runtime.Object { return &storagev1.CSIDriver{} },
		NewList:        func() runtime.Object { return &storagev1.CSIDriverList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

// SetDefaults fills in upstream's v1 defaults: a driver needs attaching, wants no pod info,
// reports no capacity, takes fsGroup for ReadWriteOnce volumes with an fsType, serves
// persistent volumes, needs no republishing, and mounts without SELinux contexts.
func SetDefaults(d *storagev1.CSIDriver) {
	s := &d.Spec
	if s.AttachRequired == nil {
		s.AttachRequired = ptr.To(true)
	}
	if s.PodInfoOnMount == nil {
		s.PodInfoOnMount = ptr.To(false)
	}
	if s.StorageCapacity == nil {
		s.StorageCapacity = ptr.To(false)
	}
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = append(s.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent)
	}
	if s.RequiresRepublish == nil {
		s.RequiresRepublish = ptr.To(false)
	}
	if s.SELinuxMount == nil {
		s.SELinuxMount = ptr.To(false)
	}
	if s.PreventPodSchedulingIfMissing == nil {
		s.PreventPodSchedulingIfMissing = ptr.To(false)
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of CSIDrivers: the generation counts
// changes of the spec, and an update must name the version it changes.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	d, oldD := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
	if !equality.Semantic.DeepEqual(d.Spec, oldD.Spec) {
		d.Generation = oldD.Generation + 1
	}
}

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateCSIDriver(obj.(*storagev1.CSIDriver))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateCSIDriverUpdate(obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver))
}

// tokenInSecretsWarning is upstream's nudge for drivers that take tokens.
const tokenInSecretsWarning = "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	d := obj.(*storagev1.CSIDriver)
	if len(d.Spec.TokenRequests) > 0 && d.Spec.ServiceAccountTokenInSecrets == nil {
		return []string{tokenInSecretsWarning}
	}
	return nil
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	d, oldD := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
	if !equality.Semantic.DeepEqual(d.Spec.TokenRequests, oldD.Spec.TokenRequests) &&
		len(d.Spec.TokenRequests) > 0 && d.Spec.ServiceAccountTokenInSecrets == nil {
		return []string{tokenInSecretsWarning}
	}
	return nil
}

// Fields are the fields CSIDrivers can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*storagev1.CSIDriver).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get csidrivers`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*storagev1.CSIDriver] {
	doc := storagev1.CSIDriverSpec{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "AttachRequired", Type: "boolean", Description: doc["attachRequired"]},
		{Name: "PodInfoOnMount", Type: "boolean", Description: doc["podInfoOnMount"]},
		{Name: "StorageCapacity", Type: "boolean", Description: doc["storageCapacity"]},
		{Name: "TokenRequests", Type: "string", Description: doc["tokenRequests"]},
		{Name: "RequiresRepublish", Type: "boolean", Description: doc["requiresRepublish"]},
		{Name: "Modes", Type: "string", Description: doc["volumeLifecycleModes"]},
		table.AgeColumn(),
	}, func(d *storagev1.CSIDriver, now time.Time) metav1.TableRow {
		s := &d.Spec
		var modes []string
		for _, m := range s.VolumeLifecycleModes {
			modes = append(modes, string(m))
		}
		tokens := "<unset>"
		if s.TokenRequests != nil {
			var audiences []string
			for _, t := range s.TokenRequests {
				audiences = append(audiences, t.Audience)
			}
			tokens = strings.Join(audiences, ",")
		}
		return metav1.TableRow{Cells: []any{d.Name, ptr.Deref(s.AttachRequired, true), ptr.Deref(s.PodInfoOnMount, false),
			ptr.Deref(s.StorageCapacity, false), tokens, ptr.Deref(s.RequiresRepublish, false),
			table.OrNone(strings.Join(modes, ",")), table.Age(d, now)}}
	})
}
