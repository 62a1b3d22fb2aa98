package flowcontrolbootstrap

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	flowcontrolinformers "k8s.io/client-go/informers/flowcontrol/v1"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrollisters "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// HookName is the post-start hook's name, kube-apiserver's; health checks show it as
// poststarthook/priority-and-fairness-config-producer.
const HookName = "priority-and-fairness-config-producer"

// FieldManager is who the producer's writes are recorded as, kube-apiserver's name.
const FieldManager = "api-priority-and-fairness-config-producer-v1"

// component names the producer in berth_recovered_panics_total and its logs.
const component = "apf-config-producer"

// Intervals; variables for tests.
var (
	// retryInterval is how long the first, blocking, attempt waits between two tries.
	retryInterval = time.Second
	// resyncInterval is how often the configuration is checked again with no change seen,
	// kube-apiserver's period.
	resyncInterval = time.Minute
)

// Producer keeps the configuration in the API. It reads the objects from informers and
// writes through the loopback client. Where kube-apiserver looks again only every minute, it
// also looks whenever an object changes, so that a deleted or edited mandatory object is back
// at once.
type Producer struct {
	want      Configuration
	levels    flowcontrollisters.PriorityLevelConfigurationLister
	schemas   flowcontrollisters.FlowSchemaLister
	synced    []cache.InformerSynced
	triggered chan struct{}
}

// NewProducer returns a producer of want reading from the informers, which the server's
// informer factory starts.
func NewProducer(want Configuration, informers flowcontrolinformers.Interface) (*Producer, error) {
	p := &Producer{want: want, triggered: make(chan struct{}, 1)}
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.trigger() },
		UpdateFunc: func(any, any) { p.trigger() },
		DeleteFunc: func(any) { p.trigger() },
	}
	levels, schemas := informers.PriorityLevelConfigurations(), informers.FlowSchemas()
	for _, inf := range []cache.SharedIndexInformer{levels.Informer(), schemas.Informer()} {
		reg, err := inf.AddEventHandler(poke)
		if err != nil {
			return nil, fmt.Errorf("watching the APF configuration: %w", err)
		}
		p.synced = append(p.synced, inf.HasSynced, reg.HasSynced)
	}
	p.levels, p.schemas = levels.Lister(), schemas.Lister()
	return p, nil
}

func (p *Producer) trigger() {
	select {
	case p.triggered <- struct{}{}:
	default: // one pending run covers every change so far
	}
}

// PostStartHook ensures the configuration once, retrying every second until it succeeds or
// the server stops (as the RBAC hook, it does not give up: an etcd slow to start must not
// take the whole process down), then keeps it in a goroutine until the server stops, which
// spawn starts (the server waits for it).
func (p *Producer) PostStartHook(hookCtx genericapiserver.PostStartHookContext, spawn func(func())) error {
	client, err := flowcontrolclient.NewForConfig(hookCtx.LoopbackClientConfig)
	if err != nil {
		return fmt.Errorf("the %s hook's loopback client: %w", HookName, err)
	}
	ctx := klog.NewContext(hookCtx, klog.LoggerWithName(klog.FromContext(hookCtx), component))
	logger := klog.FromContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return nil // the server is stopping
	}
	_ = wait.PollUntilContextCancel(ctx, retryInterval, true, func(ctx context.Context) (bool, error) {
		if err := p.syncOnce(ctx, client); err != nil {
			if ctx.Err() == nil {
				logger.Error(err, "Ensuring the APF configuration failed; retrying", "after", retryInterval)
			}
			return false, nil
		}
		return true, nil
	})
	spawn(func() { p.run(ctx, client) })
	return nil
}

// run ensures the configuration whenever it changes and every resyncInterval.
func (p *Producer) run(ctx context.Context, client flowcontrolclient.FlowcontrolV1Interface) {
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(resyncInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			logger.V(2).Info("APF configuration producer is exiting")
			return
		case <-ticker.C:
		case <-p.triggered:
		}
		if err := p.syncOnce(ctx, client); err != nil && ctx.Err() == nil {
			logger.Error(err, "Ensuring the APF configuration failed; will retry")
		}
	}
}

// syncOnce plans from the informers' view and carries the plan out. A panic costs this
// attempt only.
func (p *Producer) syncOnce(ctx context.Context, client flowcontrolclient.FlowcontrolV1Interface) error {
	return panics.Call(ctx, component, func() error {
		levels, err := p.levels.List(labels.Everything())
		if err != nil {
			return fmt.Errorf("listing priority levels: %w", err)
		}
		schemas, err := p.schemas.List(labels.Everything())
		if err != nil {
			return fmt.Errorf("listing flow schemas: %w", err)
		}
		return Apply(ctx, client, Plan(Current{PriorityLevels: levels, FlowSchemas: schemas}, p.want))
	})
}

// Apply carries out a plan, going on past a failed action so that as much as possible is in
// place, and returns the failures joined. What a concurrent writer did first (the object
// exists, changed or went away) is no failure: the change it made triggers the next plan.
func Apply(ctx context.Context, client flowcontrolclient.FlowcontrolV1Interface, plan []Action) error {
	logger := klog.FromContext(ctx)
	var errs []error
	for _, a := range plan {
		err := do(ctx, client, a)
		switch {
		case err == nil:
			logger.V(2).Info("Wrote APF configuration", "verb", a.Verb, "kind", a.Kind(), "name", a.Name(), "set", a.Set)
		case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err), apierrors.IsNotFound(err):
			logger.V(4).Info("APF configuration object changed concurrently; checking again later", "verb", a.Verb, "kind", a.Kind(), "name", a.Name(), "err", err)
		default:
			errs = append(errs, fmt.Errorf("%s %s %q (%s): %w", a.Verb, a.Kind(), a.Name(), a.Set, err))
		}
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
	return errors.Join(errs...)
}

func do(ctx context.Context, client flowcontrolclient.FlowcontrolV1Interface, a Action) error {
	create := metav1.CreateOptions{FieldManager: FieldManager}
	update := metav1.UpdateOptions{FieldManager: FieldManager}
	if pl := a.PriorityLevel; pl != nil {
		levels := client.PriorityLevelConfigurations()
		switch a.Verb {
		case Create:
			_, err := levels.Create(ctx, pl, create)
			return err
		case Update:
			_, err := levels.Update(ctx, pl, update)
			return err
		default:
			return levels.Delete(ctx, pl.Name, deleteOptions(pl.ObjectMeta))
		}
	}
	fs := a.FlowSchema
	schemas := client.FlowSchemas()
	switch a.Verb {
	case Create:
		_, err := schemas.Create(ctx, fs, create)
		return err
	case Update:
		_, err := schemas.Update(ctx, fs, update)
		return err
	default:
		return schemas.Delete(ctx, fs.Name, deleteOptions(fs.ObjectMeta))
	}
}

// deleteOptions deletes the object planned on only: one an admin has since taken over (set
// the annotation to "false") fails with a conflict instead.
func deleteOptions(m metav1.ObjectMeta) metav1.DeleteOptions {
	var pre metav1.Preconditions
	if m.UID != "" {
		pre.UID = &m.UID
	}
	if m.ResourceVersion != "" {
		pre.ResourceVersion = &m.ResourceVersion
	}
	return metav1.DeleteOptions{Preconditions: &pre}
}
