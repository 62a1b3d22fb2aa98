package podtemplate

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the podtemplates endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("podtemplates"),
		Singular:       "podtemplate",
		New:            func() runtime.Object { return &corev1.PodTemplate{} },
		NewList:        func() runtime.Object { return &corev1.PodTemplateList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

// SetDefaults defaults the template as every pod template is.
func SetDefaults(t *corev1.PodTemplate) { pod.SetTemplateDefaults(&t.Template) }

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of PodTemplates.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// PrepareForCreate starts the generation at 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*corev1.PodTemplate).Generation = 1
}

// PrepareForUpdate bumps the generation when the template changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	t, o := obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate)
	t.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(t.Template, o.Template) {
		t.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	t := obj.(*corev1.PodTemplate)
	errs := apivalidation.ValidateObjectMeta(&t.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, pod.ValidatePodTemplateSpec(&t.Template, templatePath)...)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	t, o := obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate)
	errs := apivalidation.ValidateObjectMetaUpdate(&t.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	return append(errs, pod.ValidatePodTemplateSpec(&t.Template, templatePath)...)
}

var templatePath = field.NewPath("template")

// WarningsOnCreate warns of the template's warnings.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return pod.TemplateWarnings(templatePath, &obj.(*corev1.PodTemplate).Template, nil)
}

// WarningsOnUpdate warns of the template's warnings when the update changed it.
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	t, o := obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate)
	if t.Generation == o.Generation {
		return nil
	}
	return pod.TemplateWarnings(templatePath, &t.Template, &o.Template)
}

// Fields are the fields PodTemplates can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*corev1.PodTemplate).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get podtemplates`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.PodTemplate] {
	// As upstream's printer: no AGE column.
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Containers", Type: "string", Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Description: "Images referenced by each container in the template."},
		{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
	}, func(t *corev1.PodTemplate, _ time.Time) metav1.TableRow {
		var names, images []string
		for _, c := range t.Template.Spec.Containers {
			names, images = append(names, c.Name), append(images, c.Image)
		}
		return metav1.TableRow{Cells: []any{t.Name, strings.Join(names, ","), strings.Join(images, ","), labels.FormatLabels(t.Template.Labels)}}
	})
}
