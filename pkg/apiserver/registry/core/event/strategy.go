package event

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// TTL is how long an event lives in etcd after its last write, as kube-apiserver's
// --event-ttl default.
const TTL = time.Hour

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of events, for both API groups that
// serve them. How strictly an event is checked depends on the group the request came through.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return ValidateEventCreate(obj.(*corev1.Event), requestGroupVersion(ctx))
}

func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateEventUpdate(obj.(*corev1.Event), old.(*corev1.Event), requestGroupVersion(ctx))
}

func requestGroupVersion(ctx context.Context) schema.GroupVersion {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		return schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	return corev1.SchemeGroupVersion
}

// Fields are the fields an event can be selected by, in the core/v1 names; events.k8s.io
// selectors are translated to these by EventsFieldLabelConversion.
//
// "source" is the reporting component under either API's name for it, as kube-apiserver
// selects it: source.component, or, when that is empty (events written through events.k8s.io
// set reportingController and rarely deprecatedSource), reportingController.
func Fields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	set := generic.ObjectMetaFieldsSet(&e.ObjectMeta, true)
	set["involvedObject.kind"] = e.InvolvedObject.Kind
	set["involvedObject.namespace"] = e.InvolvedObject.Namespace
	set["involvedObject.name"] = e.InvolvedObject.Name
	set["involvedObject.uid"] = string(e.InvolvedObject.UID)
	set["involvedObject.apiVersion"] = e.InvolvedObject.APIVersion
	set["involvedObject.resourceVersion"] = e.InvolvedObject.ResourceVersion
	set["involvedObject.fieldPath"] = e.InvolvedObject.FieldPath
	set["reason"] = e.Reason
	set["reportingComponent"] = e.ReportingController
	set["source"] = source
	set["type"] = e.Type
	return set
}
