// Package componentstatus serves core/v1 componentstatuses, as kube-apiserver still does
// (deprecated since v1.19: every response carries the warning "v1 ComponentStatus is
// deprecated in v1.19+", which the generic endpoint adds from the type's lifecycle). Nothing is
// stored: each get or list probes the components (probe.go) and reports a Healthy condition.
package componentstatus

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// REST is the componentstatuses endpoint: get and list only.
type REST struct {
	components map[string]Prober
	*table.Convertor[*corev1.ComponentStatus]
}

var (
	_ rest.Getter               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// NewREST returns the endpoint reporting components, by name.
func NewREST(components map[string]Prober) *REST {
	return &REST{components: components, Convertor: newTableConvertor(clock.RealClock{})}
}

func (*REST) New() runtime.Object     { return &corev1.ComponentStatus{} }
func (*REST) NewList() runtime.Object { return &corev1.ComponentStatusList{} }
func (*REST) Destroy()                {}
func (*REST) NamespaceScoped() bool   { return false }
func (*REST) ShortNames() []string    { return []string{"cs"} }
func (*REST) GetSingularName() string { return "componentstatus" }
func (r *REST) status(ctx context.Context, name string) *corev1.ComponentStatus {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// A probe runs in a goroutine of its own under List: a panic in it must be that
	// component's error, not the end of the API server.
	var res Result
	if err := panics.Call(ctx, "componentstatus", func() error { res = r.components[name].Probe(ctx); return nil }); err != nil {
		res = Result{Status: corev1.ConditionUnknown, Error: err.Error()}
	}
	return &corev1.ComponentStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Conditions: []corev1.ComponentCondition{{
			Type:    corev1.ComponentHealthy,
			Status:  res.Status,
			Message: res.Message,
			Error:   res.Error,
		}},
	}
}

// Get probes one component.
func (r *REST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if _, ok := r.components[name]; !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("componentstatus"), name)
	}
	return r.status(ctx, name), nil
}

// List probes every component at once. Selectors apply to the metadata (components have no
// labels, so a label selector matches none), as upstream's.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	names := make([]string, 0, len(r.components))
	for name := range r.components {
		names = append(names, name)
	}
	sort.Strings(names)
	statuses := make([]*corev1.ComponentStatus, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = r.status(ctx, name)
		}()
	}
	wg.Wait()

	label, field := labels.Everything(), fields.Everything()
	if options != nil {
		if options.LabelSelector != nil {
			label = options.LabelSelector
		}
		if options.FieldSelector != nil {
			field = options.FieldSelector
		}
	}
	list := &corev1.ComponentStatusList{Items: []corev1.ComponentStatus{}}
	for _, s := range statuses {
		if label.Matches(labels.Set(s.Labels)) && field.Matches(generic.ObjectMetaFieldsSet(&s.ObjectMeta, false)) {
			list.Items = append(list.Items, *s)
		}
	}
	return list, nil
}

// newTableConvertor returns the columns of `kubectl get componentstatuses`, as upstream's
// printComponentStatus.
func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.ComponentStatus] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Status", Type: "string", Description: "Status of the component conditions"},
		{Name: "Message", Type: "string", Description: "Message of the component conditions"},
		{Name: "Error", Type: "string", Description: "Error of the component conditions"},
	}, func(c *corev1.ComponentStatus, _ time.Time) metav1.TableRow {
		status, message, errText := "Unknown", "", ""
		for _, cond := range c.Conditions {
			if cond.Type == corev1.ComponentHealthy {
				status = "Unhealthy"
				if cond.Status == corev1.ConditionTrue {
					status = "Healthy"
				}
				message, errText = cond.Message, cond.Error
				break
			}
		}
		return metav1.TableRow{Cells: []any{c.Name, status, message, errText}}
	})
}
