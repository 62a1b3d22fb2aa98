// Package validatingwebhookconfiguration is the registry of admissionregistration.k8s.io/v1
// ValidatingWebhookConfigurations: their defaults, validation, strategy, table and storage.
// The ValidatingAdmissionWebhook admission plugin reads them and calls the webhooks.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations.
package validatingwebhookconfiguration

import (
	"context"
	"reflect"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the validatingwebhookconfigurations endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       admissionregistrationv1.Resource("validatingwebhookconfigurations"),
		Singular:       "validatingwebhookconfiguration",
		New:            func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		NewList:        func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, InCategories: []string{"api-extensions"}}, nil
}

// SetDefaults defaults each webhook (failure and match policy, selectors, timeout, rule scope,
// service port), as upstream's v1 defaults.
func SetDefaults(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for _, w := range validation.ValidatingWebhooks(c.Webhooks) {
		validation.SetWebhookDefaults(w)
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of ValidatingWebhookConfigurations. As
// upstream, an update must name the resourceVersion it read.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                         { return false }
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// PrepareForCreate starts the generation at 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Generation = 1
}

// PrepareForUpdate bumps the generation when the webhooks changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	c, o := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration), old.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	if !reflect.DeepEqual(c.Webhooks, o.Webhooks) {
		c.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	return append(Validate(c, validation.NewWebhookOptions()), validation.ValidateName(c.Name)...)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration), old.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	return Validate(c, validation.UpdateWebhookOptions(validation.ValidatingWebhooks(c.Webhooks), validation.ValidatingWebhooks(o.Webhooks)))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	return append(validation.NameWarnings(c.Name, false), validation.RuleWarnings(validation.ValidatingWebhooks(c.Webhooks))...)
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	return append(validation.NameWarnings(c.Name, true), validation.RuleWarnings(validation.ValidatingWebhooks(c.Webhooks))...)
}

// Validate validates a configuration, in upstream's words; opts say which checks a stored
// configuration is spared.
func Validate(c *admissionregistrationv1.ValidatingWebhookConfiguration, opts validation.WebhookOptions) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&c.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validation.ValidateWebhooks(validation.ValidatingWebhooks(c.Webhooks), opts)...)
}

// Fields are the fields configurations can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get validatingwebhookconfigurations`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*admissionregistrationv1.ValidatingWebhookConfiguration] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
		table.AgeColumn(),
	}, func(c *admissionregistrationv1.ValidatingWebhookConfiguration, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{c.Name, int64(len(c.Webhooks)), table.Age(c, now)}}
	})
}
