// Package mutatingwebhookconfiguration is the registry of admissionregistration.k8s.io/v1
// MutatingWebhookConfigurations: their defaults, validation, strategy, table and storage.
// The MutatingAdmissionWebhook admission plugin reads them and calls the webhooks.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations.
package mutatingwebhookconfiguration

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
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the mutatingwebhookconfigurations endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       admissionregistrationv1.Resource("mutatingwebhookconfigurations"),
		Singular:       "mutatingwebhookconfiguration",
		New:            func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		NewList:        func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
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
// service port, and a mutating webhook's reinvocation policy Never), as upstream's v1 defaults.
func SetDefaults(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i, w := range validation.MutatingWebhooks(c.Webhooks) {
		validation.SetWebhookDefaults(w)
		if c.Webhooks[i].ReinvocationPolicy == nil {
			c.Webhooks[i].ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of MutatingWebhookConfigurations. As
// upstream, an update must name the resourceVersion it read.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                         { return false }
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// PrepareForCreate starts the generation at 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Generation = 1
}

// PrepareForUpdate bumps the generation when the webhooks changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	c, o := obj.(*admissionregistrationv1.MutatingWebhookConfiguration), old.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if !reflect.DeepEqual(c.Webhooks, o.Webhooks) {
		c.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	return append(Validate(c, validation.NewWebhookOptions()), validation.ValidateName(c.Name)...)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*admissionregistrationv1.MutatingWebhookConfiguration), old.(*admissionregistrationv1.MutatingWebhookConfiguration)
	return Validate(c, validation.UpdateWebhookOptions(validation.MutatingWebhooks(c.Webhooks), validation.MutatingWebhooks(o.Webhooks)))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	return append(validation.NameWarnings(c.Name, false), validation.RuleWarnings(validation.MutatingWebhooks(c.Webhooks))...)
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	return append(validation.NameWarnings(c.Name, true), validation.RuleWarnings(validation.MutatingWebhooks(c.Webhooks))...)
}

// Validate validates a configuration, in upstream's words; opts say which checks a stored
// configuration is spared.
func Validate(c *admissionregistrationv1.MutatingWebhookConfiguration, opts validation.WebhookOptions) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&c.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validation.ValidateWebhooks(validation.MutatingWebhooks(c.Webhooks), opts)...)
	for i, w := range c.Webhooks {
		errs = append(errs, validation.ValidateReinvocationPolicy(w.ReinvocationPolicy, field.NewPath("webhooks").Index(i).Child("reinvocationPolicy"))...)
	}
	return errs
}

// Fields are the fields configurations can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*admissionregistrationv1.MutatingWebhookConfiguration).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get mutatingwebhookconfigurations`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*admissionregistrationv1.MutatingWebhookConfiguration] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
		table.AgeColumn(),
	}, func(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{c.Name, int64(len(c.Webhooks)), table.Age(c, now)}}
	})
}
