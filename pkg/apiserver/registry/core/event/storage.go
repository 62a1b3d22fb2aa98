package event

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// NewREST returns the events endpoint of resource, which is core/v1 events or
// events.k8s.io/v1 events. Both keep their objects as core/v1 Events under one etcd prefix
// (the storage factory makes them cohabit), so each sees the events the other writes.
func NewREST(getter generic.RESTOptionsGetter, resource schema.GroupResource) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       resource,
		Singular:       "event",
		New:            func() runtime.Object { return &corev1.Event{} },
		NewList:        func() runtime.Object { return &corev1.EventList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
		TTL: func(runtime.Object, uint64, bool) (uint64, error) {
			return uint64(TTL.Seconds()), nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"ev"}}, nil
}

// Resources are the two API resources that serve events.
var Resources = []schema.GroupResource{corev1.Resource("events"), eventsv1.Resource("events")}
