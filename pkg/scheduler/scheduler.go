// Package scheduler is berth's kube-scheduler, built as seed 003 walks through it: Run pops
// pods from the scheduling queue one at a time into scheduleOne, whose scheduling cycle runs
// the profile's plugins (findNodesThatFitPod, prioritizeNodes, selectHost), assumes the pod in
// the cache, and whose binding cycle binds it in a goroutine of its own.
//
// A panic while handling one pod ends only that pod's attempt (DESIGN.md, "One process, many
// failure domains"): the framework runtime turns a plugin's panic into an Error status naming
// the plugin, and scheduleOne, the binding goroutine, the extenders' calls and the informers'
// event handlers recover at their boundary; the pod backs off as after any internal error
// (FailedScheduling, PodScheduled=False with reason SchedulerError), and
// berth_recovered_panics_total{component="scheduler"} counts it.
//
// The parts live below: framework (the extension points and their runtime), queue, cache,
// plugins, config, extender, metrics.
package scheduler

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/scheduler/cache"
	"github.com/berth-cluster/berth/pkg/scheduler/config"
	"github.com/berth-cluster/berth/pkg/scheduler/extender"
	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/framework/parallelize"
	frameworkruntime "github.com/berth-cluster/berth/pkg/scheduler/framework/runtime"
	"github.com/berth-cluster/berth/pkg/scheduler/queue"
)

// assumedPodTTL is how long an assumed pod whose binding finished stays in the cache without
// the informer confirming it: long enough for any watch delay, short enough that a lost
// binding does not hold a node's resources for long.
const assumedPodTTL = 30 * time.Second

// Scheduler schedules the pods of its profiles.
type Scheduler struct {
	// Cache holds the nodes and the pods bound or assumed on them; the snapshot is its copy
	// for one scheduling cycle.
	Cache    *cache.Cache
	snapshot *cache.Snapshot
	// Queue holds the pods waiting for a node.
	Queue *queue.PriorityQueue
	// Profiles are the frameworks by schedulerName.
	Profiles  map[string]*frameworkruntime.Framework
	Extenders []*extender.HTTPExtender

	client                   kubernetes.Interface
	pods                     corelisters.PodLister
	percentageOfNodesToScore int32
	// nextStartNodeIndex makes successive cycles start filtering at different nodes, so
	// that with a partial search every node gets its turn.
	nextStartNodeIndex int
	clock              clock.PassiveClock
	// logger is for the informers' event handlers, which get no context.
	logger klog.Logger
}

// Options build a Scheduler.
type Options struct {
	Config          *config.Config
	Client          kubernetes.Interface
	InformerFactory informers.SharedInformerFactory
	// Broadcaster sends the events (events.k8s.io/v1) the scheduler records.
	Broadcaster events.EventBroadcaster
	// Registry are the plugins that profiles may name.
	Registry framework.Registry
}

// New builds the scheduler and registers its informer event handlers; the caller starts the
// informers and calls Run.
func New(ctx context.Context, o Options) (*Scheduler, error) {
	cfg := o.Config
	registerPodInformer(o.InformerFactory)
	snapshot := cache.NewEmptySnapshot()
	parallelizer := parallelize.NewParallelizer(int(*cfg.Parallelism))
	waitingPods := frameworkruntime.NewWaitingPodsMap()

	profiles := map[string]*frameworkruntime.Framework{}
	preEnqueue := map[string][]framework.PreEnqueuePlugin{}
	hints := queue.QueueingHintMapPerProfile{}
	var lessFn func(a, b *framework.QueuedPodInfo) bool
	for i := range cfg.Profiles {
		p := &cfg.Profiles[i]
		name := *p.SchedulerName
		fwk, err := frameworkruntime.NewFramework(ctx, o.Registry, p, cfg.PluginArgs[name],
			frameworkruntime.WithClientSet(o.Client),
			frameworkruntime.WithInformerFactory(o.InformerFactory),
			frameworkruntime.WithEventRecorder(o.Broadcaster.NewRecorder(clientscheme.Scheme, name)),
			frameworkruntime.WithSnapshotSharedLister(snapshot),
			frameworkruntime.WithParallelizer(parallelizer),
			frameworkruntime.WithWaitingPods(waitingPods),
		)
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", name, err)
		}
		profiles[name] = fwk
		preEnqueue[name] = fwk.PreEnqueuePlugins()
		var plugins []framework.Plugin
		for _, e := range fwk.EnqueueExtensions() {
			plugins = append(plugins, e)
		}
		if hints[name], err = queue.BuildQueueingHintMap(ctx, plugins); err != nil {
			return nil, fmt.Errorf("profile %q: %w", name, err)
		}
		// kube-scheduler requires one queue sort for all profiles: there is one queue.
		if lessFn == nil {
			lessFn = fwk.QueueSortFunc()
		}
	}

	q := queue.NewPriorityQueue(lessFn,
		queue.WithPodInitialBackoffDuration(time.Duration(*cfg.PodInitialBackoffSeconds)*time.Second),
		queue.WithPodMaxBackoffDuration(time.Duration(*cfg.PodMaxBackoffSeconds)*time.Second),
		queue.WithPreEnqueuePluginMap(preEnqueue),
		queue.WithQueueingHintMap(hints),
		queue.WithMetricsRecorder(queueMetrics{}),
		queue.WithPodLister(o.InformerFactory.Core().V1().Pods().Lister()),
	)
	for _, fwk := range profiles {
		fwk.SetPodNominator(q)
	}
	var exts []*extender.HTTPExtender
	for _, ec := range cfg.Extenders {
		e, err := extender.New(ec)
		if err != nil {
			return nil, err
		}
		exts = append(exts, e)
	}
	var percentage int32
	if cfg.PercentageOfNodesToScore != nil {
		percentage = *cfg.PercentageOfNodesToScore
	}
	s := &Scheduler{
		Cache:                    cache.New(ctx, assumedPodTTL),
		snapshot:                 snapshot,
		Queue:                    q,
		Profiles:                 profiles,
		Extenders:                exts,
		client:                   o.Client,
		pods:                     o.InformerFactory.Core().V1().Pods().Lister(),
		percentageOfNodesToScore: percentage,
		clock:                    clock.RealClock{},
		logger:                   klog.FromContext(ctx),
	}
	if err := s.addAllEventHandlers(o.InformerFactory); err != nil {
		return nil, err
	}
	return s, nil
}

// Run schedules until ctx ends: the queue's flushing goroutines, then scheduleOne in a loop,
// as seed 003's Run does.
func (s *Scheduler) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	s.Queue.Run(logger)
	go func() {
		<-ctx.Done()
		s.Queue.Close()
	}()
	for ctx.Err() == nil {
		s.scheduleOne(ctx)
	}
	for _, fwk := range s.Profiles {
		_ = fwk.Close()
	}
}

// frameworkForPod returns the profile that schedules pod.
func (s *Scheduler) frameworkForPod(pod *v1.Pod) (*frameworkruntime.Framework, error) {
	fwk, ok := s.Profiles[pod.Spec.SchedulerName]
	if !ok {
		return nil, fmt.Errorf("profile not found for scheduler name %q", pod.Spec.SchedulerName)
	}
	return fwk, nil
}

// responsibleForPod reports whether one of the profiles schedules pod.
func (s *Scheduler) responsibleForPod(pod *v1.Pod) bool {
	_, ok := s.Profiles[pod.Spec.SchedulerName]
	return ok
}
