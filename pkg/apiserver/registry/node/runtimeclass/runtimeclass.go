// Package runtimeclass is the registry of node.k8s.io/v1 RuntimeClasses: their validation,
// strategy, table and storage. A RuntimeClass names the CRI handler a pod's sandbox runs
// with, the pod overhead it adds and the nodes it may run on; the RuntimeClass admission
// plugin (pkg/apiserver/admission) applies the last two to pods, and the node agent passes
// the handler to the runtime.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/node.k8s.io/v1/runtimeclasses.
package runtimeclass

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the runtimeclasses endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       nodev1.Resource("runtimeclasses"),
		Singular:       "runtimeclass",
		New:            func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList:        func() runtime.Object { return &nodev1.RuntimeClassList{} },
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

// Strategy is the create, update and delete strategy of RuntimeClasses.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateRuntimeClass(obj.(*nodev1.RuntimeClass))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateRuntimeClassUpdate(obj.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass))
}

// ValidateRuntimeClass validates a RuntimeClass, in upstream's words.
func ValidateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&rc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	handler := field.NewPath("handler")
	if rc.Handler == "" {
		errs = append(errs, field.Required(handler, ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
			errs = append(errs, field.Invalid(handler, rc.Handler, msg))
		}
	}
	if rc.Overhead != nil {
		errs = append(errs, pod.ValidateContainerResourceRequirements(&corev1.ResourceRequirements{Limits: rc.Overhead.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		p := field.NewPath("scheduling")
		if s.NodeSelector != nil {
			errs = append(errs, metavalidation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		}
		tp := p.Child("tolerations")
		errs = append(errs, pod.ValidateTolerations(s.Tolerations, tp)...)
		seen := map[corev1.Toleration]bool{}
		for i, t := range s.Tolerations {
			key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			if seen[key] {
				errs = append(errs, field.Duplicate(tp.Index(i), t))
			}
			seen[key] = true
		}
	}
	return errs
}

// ValidateRuntimeClassUpdate validates an update: the handler is immutable.
func ValidateRuntimeClassUpdate(rc, old *nodev1.RuntimeClass) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, apivalidation.ValidateImmutableField(rc.Handler, old.Handler, field.NewPath("handler"))...)
}

// Fields are the fields RuntimeClasses can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*nodev1.RuntimeClass).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get runtimeclasses`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*nodev1.RuntimeClass] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Handler", Type: "string", Description: "Handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class."},
		table.AgeColumn(),
	}, func(rc *nodev1.RuntimeClass, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{rc.Name, rc.Handler, table.Age(rc, now)}}
	})
}
