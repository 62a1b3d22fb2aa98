// Package storageversionmigration is the registry of storagemigration.k8s.io/v1
// StorageVersionMigrations: their validation, strategy, table and storage, and the status
// subresource. A migration asks the storage version migrator to rewrite every stored
// object of one resource in the current storage version; it reports progress in status.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/storagemigration.k8s.io/v1/storageversionmigrations and its
// status.
package storageversionmigration

import (
	"context"
	"fmt"
	"strings"
	"time"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage holds the endpoints of StorageVersionMigrations.
type Storage struct {
	StorageVersionMigration *registry.Resource
	Status                  *registry.SubresourceREST
}

// NewStorage returns the storageversionmigrations endpoint and its status.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       storagemigrationv1.Resource("storageversionmigrations"),
		Singular:       "storageversionmigration",
		New:            func() runtime.Object { return &storagemigrationv1.StorageVersionMigration{} },
		NewList:        func() runtime.Object { return &storagemigrationv1.StorageVersionMigrationList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		StorageVersionMigration: &registry.Resource{Store: store},
		Status:                  registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of migrations; the main resource
// never writes status, and the spec is fixed at creation.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

// AllowUnconditionalUpdate is false, as upstream's: an update must name the version it
// changes, since the migrator and users may race on a migration.
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*storagemigrationv1.StorageVersionMigration).Status = storagemigrationv1.StorageVersionMigrationStatus{}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*storagemigrationv1.StorageVersionMigration).Status = old.(*storagemigrationv1.StorageVersionMigration).Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return Validate(obj.(*storagemigrationv1.StorageVersionMigration))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	svm, oldSVM := obj.(*storagemigrationv1.StorageVersionMigration), old.(*storagemigrationv1.StorageVersionMigration)
	errs := Validate(svm)
	errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&svm.ObjectMeta, &oldSVM.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, apivalidation.ValidateImmutableField(svm.Spec, oldSVM.Spec, field.NewPath("spec"))...)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(storagemigrationv1.SchemeGroupVersion, "status")
}

// Validate validates a migration: the resource to migrate is a DNS-1035 label, its group
// (empty for the core group) a DNS subdomain.
func Validate(svm *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&svm.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	res := field.NewPath("spec", "resource")
	if r := svm.Spec.Resource.Resource; r == "" {
		errs = append(errs, field.Required(res.Child("resource"), "resource is required to be set"))
	} else if msgs := validation.IsDNS1035Label(r); len(msgs) > 0 {
		errs = append(errs, field.Invalid(res.Child("resource"), r, strings.Join(msgs, ",")))
	}
	if g := svm.Spec.Resource.Group; g != "" {
		if msgs := validation.IsDNS1123Subdomain(g); len(msgs) > 0 {
			errs = append(errs, field.Invalid(res.Child("group"), g, strings.Join(msgs, ",")))
		}
	}
	return errs
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of storageversionmigrations/status.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	svm, oldSVM := obj.(*storagemigrationv1.StorageVersionMigration), old.(*storagemigrationv1.StorageVersionMigration)
	svm.Spec = oldSVM.Spec
	metav1.ResetObjectMetaForStatus(&svm.ObjectMeta, &oldSVM.ObjectMeta)
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateStatusUpdate(obj.(*storagemigrationv1.StorageVersionMigration), old.(*storagemigrationv1.StorageVersionMigration))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(storagemigrationv1.SchemeGroupVersion, "metadata", "spec")
}

// ValidateStatusUpdate validates the migrator's report: the resource version it migrates
// up to is set once and must be one the server could have given; Succeeded and Failed
// exclude each other and, once true, stay true.
func ValidateStatusUpdate(svm, old *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&svm.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status")
	rv := svm.Status.ResourceVersion
	if rv != "" {
		// Comparing the version with itself is how upstream checks that it parses.
		if c, err := resourceversion.CompareResourceVersion(rv, rv); err != nil || c != 0 {
			if err == nil {
				err = fmt.Errorf("unable to compare resource versions, %s is not equal to %s", rv, rv)
			}
			errs = append(errs, field.Invalid(p.Child("resourceVersion"), rv, err.Error()))
		}
	}
	errs = append(errs, metavalidation.ValidateConditions(svm.Status.Conditions, p.Child("conditions"))...)
	if old.Status.ResourceVersion != "" && old.Status.ResourceVersion != rv {
		errs = append(errs, field.Invalid(p.Child("resourceVersion"), rv, "field is immutable"))
	}
	conditions := p.Child("conditions")
	succeeded, failed := isTrue(svm, storagemigrationv1.MigrationSucceeded), isTrue(svm, storagemigrationv1.MigrationFailed)
	if succeeded && failed {
		errs = append(errs, field.Invalid(conditions, svm.Status.Conditions, "Both success and failed conditions cannot be true at the same time"))
	}
	if isTrue(old, storagemigrationv1.MigrationSucceeded) && !succeeded {
		errs = append(errs, field.Invalid(conditions, svm.Status.Conditions, "Success condition cannot be set to false once it is true"))
	}
	if isTrue(old, storagemigrationv1.MigrationFailed) && !failed {
		errs = append(errs, field.Invalid(conditions, svm.Status.Conditions, "Failed condition cannot be set to false once it is true"))
	}
	return errs
}

func isTrue(svm *storagemigrationv1.StorageVersionMigration, t storagemigrationv1.MigrationConditionType) bool {
	return meta.IsStatusConditionTrue(svm.Status.Conditions, string(t))
}

// Fields are the fields migrations can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*storagemigrationv1.StorageVersionMigration).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get storageversionmigrations`: the
// resource and the migration's state (Running, Succeeded, Failed, or Unknown).
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*storagemigrationv1.StorageVersionMigration] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Resource", Type: "string", Description: "GroupResource to migrate"},
		{Name: "Status", Type: "string", Description: "Status of the migration"},
	}, func(svm *storagemigrationv1.StorageVersionMigration, _ time.Time) metav1.TableRow {
		state := "Unknown"
		for _, c := range svm.Status.Conditions {
			if c.Status != metav1.ConditionTrue {
				continue
			}
			switch storagemigrationv1.MigrationConditionType(c.Type) {
			case storagemigrationv1.MigrationRunning, storagemigrationv1.MigrationSucceeded, storagemigrationv1.MigrationFailed:
				state = c.Type
			}
		}
		return metav1.TableRow{Cells: []any{svm.Name, svm.Spec.Resource.String(), state}}
	})
}
