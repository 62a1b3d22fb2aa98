package cronjob

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of CronJobs.
type Storage struct {
	CronJob *registry.Resource
	Status  *registry.SubresourceREST
}

// NewStorage returns the cronjobs and cronjobs/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       batchv1.Resource("cronjobs"),
		Singular:       "cronjob",
		New:            func() runtime.Object { return &batchv1.CronJob{} },
		NewList:        func() runtime.Object { return &batchv1.CronJobList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		CronJob: &registry.Resource{Store: store, Short: []string{"cj"}, InCategories: []string{"all"}},
		Status:  registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}
