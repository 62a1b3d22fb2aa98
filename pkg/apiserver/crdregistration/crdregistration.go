// Package crdregistration keeps an APIService for every group version that a
// CustomResourceDefinition serves, so that the aggregator in front of the server chain lists
// custom resources in /apis and routes their requests down the chain, as kube-apiserver's
// crd-autoregister controller does. The APIServices are local (no Service): the aggregator
// hands their requests to the apiextensions server.
//
// Which APIService a group version wants is a pure function of the CRDs (Desired); the
// controller only tells the aggregator's auto-registration what it decided.
package crdregistration

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	crdlisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// kube-apiserver's priorities for CRD groups: below every built-in group, and versions
// within a group sorted the Kubernetes way (v2 > v1 > v1beta1) among equals.
const (
	groupPriorityMinimum = 1000
	versionPriority      = 100
)

// Registration is what the aggregator's auto-registration controller offers.
type Registration interface {
	AddAPIServiceToSync(*apiregistrationv1.APIService)
	RemoveAPIServiceToSync(name string)
}

// Desired is the APIService that group version gv needs given crds: one when any CRD of the
// group serves gv, nil when none does.
func Desired(gv schema.GroupVersion, crds []*apiextensionsv1.CustomResourceDefinition) *apiregistrationv1.APIService {
	for _, crd := range crds {
		if crd.Spec.Group != gv.Group {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == gv.Version && v.Served {
				return &apiregistrationv1.APIService{
					ObjectMeta: metav1.ObjectMeta{Name: Name(gv)},
					Spec: apiregistrationv1.APIServiceSpec{
						Group:                gv.Group,
						Version:              gv.Version,
						GroupPriorityMinimum: groupPriorityMinimum,
						VersionPriority:      versionPriority,
					},
				}
			}
		}
	}
	return nil
}

// Name is the name of gv's APIService: "v1.example.com".
func Name(gv schema.GroupVersion) string { return gv.Version + "." + gv.Group }

// Controller follows the CRDs and registers their group versions.
type Controller struct {
	crds   crdlisters.CustomResourceDefinitionLister
	synced cache.InformerSynced
	reg    Registration
	queue  workqueue.TypedRateLimitingInterface[schema.GroupVersion]

	initial chan struct{}
}

// New returns a controller over informer's CRDs; Run starts it.
func New(informer crdinformers.CustomResourceDefinitionInformer, reg Registration) (*Controller, error) {
	c := &Controller{
		crds:   informer.Lister(),
		synced: informer.Informer().HasSynced,
		reg:    reg,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[schema.GroupVersion](),
			workqueue.TypedRateLimitingQueueConfig[schema.GroupVersion]{Name: "crd_autoregistration_controller"}),
		initial: make(chan struct{}),
	}
	// An update enqueues the old versions too: a version no longer served loses its APIService.
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(old, cur any) { c.enqueue(old); c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("crd-autoregister: %w", err)
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	for _, v := range crd.Spec.Versions {
		c.queue.Add(schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name})
	}
}

// Run registers the CRDs already stored, then (WaitForInitialSync returns from then on)
// follows changes until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[schema.GroupVersion]{
		Name:           "crd-autoregister",
		Queue:          c.queue,
		Sync:           c.sync,
		KeyName:        "groupVersion",
		FailureMessage: "Registering a CRD group version",
		// The first pass, before the aggregator's auto-registration starts: otherwise its
		// first sync would delete the APIServices of CRDs that still exist.
		AfterCacheSync: func(ctx context.Context) {
			defer close(c.initial)
			crds, err := c.crds.List(labels.Everything())
			if err != nil {
				return
			}
			for _, crd := range crds {
				for _, v := range crd.Spec.Versions {
					_ = c.sync(ctx, schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name})
				}
			}
		},
	}
	return w.Run(ctx, workers, c.synced)
}

// WaitForInitialSync returns once the CRDs stored at start are registered, or ctx ends.
func (c *Controller) WaitForInitialSync(ctx context.Context) bool {
	select {
	case <-c.initial:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *Controller) sync(_ context.Context, gv schema.GroupVersion) error {
	crds, err := c.crds.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing CRDs: %w", err)
	}
	if svc := Desired(gv, crds); svc != nil {
		c.reg.AddAPIServiceToSync(svc)
	} else {
		c.reg.RemoveAPIServiceToSync(Name(gv))
	}
	return nil
}
