// Package controllerrevision is the registry of apps/v1 ControllerRevisions, the snapshots of a
// template that DaemonSets and StatefulSets roll back to: their validation (a JSON object as
// data, which never changes), strategy, table and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the validate
// step for /apis/apps/v1/namespaces/{ns}/controllerrevisions.
package controllerrevision

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the controllerrevisions endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       appsv1.Resource("controllerrevisions"),
		Singular:       "controllerrevision",
		New:            func() runtime.Object { return &appsv1.ControllerRevision{} },
		NewList:        func() runtime.Object { return &appsv1.ControllerRevisionList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of ControllerRevisions.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateControllerRevisionCreate(obj.(*appsv1.ControllerRevision))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateControllerRevisionUpdate(obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision))
}

func validate(r *appsv1.ControllerRevision) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&r.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, apivalidation.ValidateNonnegativeField(r.Revision, field.NewPath("revision"))...)
}

// ValidateControllerRevisionCreate validates a new ControllerRevision: its data must be a JSON
// object.
func ValidateControllerRevisionCreate(r *appsv1.ControllerRevision) field.ErrorList {
	errs := validate(r)
	dataPath := field.NewPath("data")
	var v any
	if r.Data.Raw == nil {
		errs = append(errs, field.Required(dataPath, "data is mandatory"))
	} else if err := json.Unmarshal(r.Data.Raw, &v); err != nil {
		errs = append(errs, field.Invalid(dataPath, "<value omitted>", fmt.Sprintf("error parsing data: %v", err.Error())))
	} else if v == nil {
		errs = append(errs, field.Required(dataPath, "data is mandatory"))
	} else if _, isObject := v.(map[string]any); !isObject {
		errs = append(errs, field.Required(dataPath, "data must be a valid JSON object"))
	}
	return errs
}

// ValidateControllerRevisionUpdate validates an update: the data is what the revision is, so
// it never changes; the revision number may (a controller that rolls back to an old revision
// renumbers it as the newest).
func ValidateControllerRevisionUpdate(r, old *appsv1.ControllerRevision) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validate(r)...)
	return append(errs, apivalidation.ValidateImmutableField(r.Data, old.Data, field.NewPath("data"))...)
}

// Fields are the fields ControllerRevisions can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*appsv1.ControllerRevision).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get controllerrevisions`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*appsv1.ControllerRevision] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Controller", Type: "string", Description: "Controller of the object"},
		{Name: "Revision", Type: "string", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
		table.AgeColumn(),
	}, func(r *appsv1.ControllerRevision, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{r.Name, controllerName(r), r.Revision, table.Age(r, now)}}
	})
}

// controllerName is "daemonset.apps/web" for the revision's controller, as kubectl prints a
// resource with its kind.
func controllerName(r *appsv1.ControllerRevision) string {
	ref := metav1.GetControllerOf(r)
	if ref == nil {
		return "<none>"
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		// Upstream's printer fails the whole table; one row says so instead.
		return "<invalid>"
	}
	gk := gv.WithKind(ref.Kind).GroupKind()
	if gk.Empty() {
		return ref.Name
	}
	return strings.ToLower(gk.String()) + "/" + ref.Name
}
