// Package runtime runs one scheduler profile's plugins: it is the "fwk.RunXxxPlugins" of seed
// 003's scheduleOne. NewFramework builds each enabled plugin once from the registry and lays
// the plugins out per extension point (expanding MultiPoint); the Run* methods call them in
// order at each point of the scheduling cycle (PreFilter, Filter, PostFilter, PreScore,
// Score, Reserve, Permit) and of the binding cycle (WaitOnPermit, PreBind, Bind, PostBind),
// record the extension-point and (for a sample of cycles) the per-plugin durations, and turn
// what plugins answer into the Status the scheduler acts on. A plugin that panics answers an
// Error status, "panic in plugin <name>: <value>" (recover.go).
//
// A Framework is also the framework.Handle its plugins get: the snapshot, the API client,
// the nominator, the parallelizer, the pods waiting at Permit, and itself as PluginsRunner.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/framework/parallelize"
)

// Framework is one scheduler profile: its plugins per extension point and what they need.
// The plugin lists are fixed once NewFramework returns, so the Run* methods read them without
// locks and may run concurrently (the binding cycle of one pod runs beside the scheduling
// cycle of the next).
type Framework struct {
	profileName              string
	percentageOfNodesToScore *int32

	// plugins holds every plugin built, by its configured name.
	plugins map[string]framework.Plugin
	// enabled is what ended up enabled at each extension point (ListPlugins).
	enabled configv1.Plugins

	preEnqueuePlugins []framework.PreEnqueuePlugin
	enqueueExtensions []framework.EnqueueExtensions
	queueSortPlugins  []framework.QueueSortPlugin
	preFilterPlugins  []framework.PreFilterPlugin
	filterPlugins     []framework.FilterPlugin
	postFilterPlugins []framework.PostFilterPlugin
	preScorePlugins   []framework.PreScorePlugin
	scorePlugins      []weightedScorePlugin
	reservePlugins    []framework.ReservePlugin
	permitPlugins     []framework.PermitPlugin
	preBindPlugins    []framework.PreBindPlugin
	bindPlugins       []framework.BindPlugin
	postBindPlugins   []framework.PostBindPlugin

	clientSet       kubernetes.Interface
	informerFactory informers.SharedInformerFactory
	eventRecorder   events.EventRecorder
	snapshotLister  framework.SharedLister
	nominator       framework.PodNominator
	parallelizer    framework.Parallelizer
	waitingPods     *WaitingPodsMap
	clock           clock.WithDelayedExecution

	sampling samplingMemo
}

// weightedScorePlugin is a Score plugin with its weight in this profile.
type weightedScorePlugin struct {
	framework.ScorePlugin
	weight int64
}

var (
	_ framework.Handle        = &Framework{}
	_ framework.PluginsRunner = &Framework{}
)

type options struct {
	clientSet       kubernetes.Interface
	informerFactory informers.SharedInformerFactory
	eventRecorder   events.EventRecorder
	snapshotLister  framework.SharedLister
	nominator       framework.PodNominator
	parallelizer    framework.Parallelizer
	waitingPods     *WaitingPodsMap
	clock           clock.WithDelayedExecution
}

// Option configures a Framework.
type Option func(*options)

// WithClientSet sets the API client plugins use (DefaultBinder binds with it).
func WithClientSet(cs kubernetes.Interface) Option { return func(o *options) { o.clientSet = cs } }

// WithInformerFactory sets the informers plugins may list from.
func WithInformerFactory(f informers.SharedInformerFactory) Option {
	return func(o *options) { o.informerFactory = f }
}

// WithEventRecorder sets the recorder plugins emit events with (preemption).
func WithEventRecorder(r events.EventRecorder) Option {
	return func(o *options) { o.eventRecorder = r }
}

// WithSnapshotSharedLister sets the snapshot of the cluster that the scheduler refreshes at
// the start of every cycle; RunPreFilterPlugins lists its nodes.
func WithSnapshotSharedLister(l framework.SharedLister) Option {
	return func(o *options) { o.snapshotLister = l }
}

// WithPodNominator sets the nominator (the scheduling queue) that
// RunFilterPluginsWithNominatedPods asks for the pods nominated to a node.
func WithPodNominator(n framework.PodNominator) Option { return func(o *options) { o.nominator = n } }

// WithParallelizer sets the parallelizer (default: parallelize.DefaultParallelism workers).
func WithParallelizer(p framework.Parallelizer) Option {
	return func(o *options) { o.parallelizer = p }
}

// WithWaitingPods shares a map of pods waiting at Permit between profiles, so that a plugin of
// one profile sees (and may allow or reject) the pods another profile holds, as in
// kube-scheduler.
func WithWaitingPods(m *WaitingPodsMap) Option { return func(o *options) { o.waitingPods = m } }

// WithClock sets the clock of Permit's timeouts (a fake one in tests).
func WithClock(c clock.WithDelayedExecution) Option { return func(o *options) { o.clock = c } }

// NewFramework builds the profile's plugins. profile.Plugins is expected defaulted (the
// default plugins merged in, as pkg/scheduler/config does); pluginArgs holds each plugin's
// decoded arguments by name, nil for its defaults. Every plugin gets the Framework as its
// Handle.
//
// It fails, as kube-scheduler does, when a plugin is not in the registry or does not
// implement an extension point it is explicitly enabled at, when a plugin is enabled twice at
// a point, when there is not exactly one QueueSort plugin or no Bind plugin, or when score
// weights are invalid.
func NewFramework(ctx context.Context, registry framework.Registry, profile *configv1.KubeSchedulerProfile, pluginArgs map[string]runtime.Object, opts ...Option) (*Framework, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.parallelizer == nil {
		o.parallelizer = parallelize.NewParallelizer(parallelize.DefaultParallelism)
	}
	if o.waitingPods == nil {
		o.waitingPods = NewWaitingPodsMap()
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	f := &Framework{
		profileName:     v1.DefaultSchedulerName,
		plugins:         map[string]framework.Plugin{},
		clientSet:       o.clientSet,
		informerFactory: o.informerFactory,
		eventRecorder:   o.eventRecorder,
		snapshotLister:  o.snapshotLister,
		nominator:       o.nominator,
		parallelizer:    o.parallelizer,
		waitingPods:     o.waitingPods,
		clock:           o.clock,
	}
	if profile == nil {
		return nil, errors.New("no profile")
	}
	if profile.SchedulerName != nil {
		f.profileName = *profile.SchedulerName
	}
	f.percentageOfNodesToScore = profile.PercentageOfNodesToScore
	if profile.Plugins == nil {
		return nil, fmt.Errorf("profile %q has no plugins", f.profileName)
	}
	if err := f.buildPlugins(ctx, registry, profile.Plugins, pluginArgs); err != nil {
		return nil, err
	}
	if n := len(f.queueSortPlugins); n != 1 {
		return nil, fmt.Errorf("only one queue sort plugin required for profile with scheduler name %q, but got %d", f.profileName, n)
	}
	if len(f.bindPlugins) == 0 {
		return nil, fmt.Errorf("at least one bind plugin is needed for profile with scheduler name %q", f.profileName)
	}
	klog.FromContext(ctx).V(2).Info("Scheduler profile ready", "profile", f.profileName, "plugins", f.ListPlugins())
	return f, nil
}

// ProfileName is the profile's scheduler name (pods choose it with spec.schedulerName).
func (f *Framework) ProfileName() string { return f.profileName }

// PercentageOfNodesToScore is the profile's override of the global setting, nil when unset.
func (f *Framework) PercentageOfNodesToScore() *int32 { return f.percentageOfNodesToScore }

// QueueSortFunc is the QueueSort plugin's Less, which orders activeQ.
func (f *Framework) QueueSortFunc() func(a, b *framework.QueuedPodInfo) bool {
	return f.queueSortPlugins[0].Less
}

// PreEnqueuePlugins are the plugins the queue asks before letting a pod into activeQ.
func (f *Framework) PreEnqueuePlugins() []framework.PreEnqueuePlugin { return f.preEnqueuePlugins }

// EnqueueExtensions are the plugins whose rejections the queue undoes on cluster events: the
// PreEnqueue, PreFilter, Filter, Reserve and Permit plugins. A plugin that does not say
// which events matter to it gets every event.
func (f *Framework) EnqueueExtensions() []framework.EnqueueExtensions { return f.enqueueExtensions }

// HasFilterPlugins reports whether any Filter plugin is enabled.
func (f *Framework) HasFilterPlugins() bool { return len(f.filterPlugins) > 0 }

// HasPostFilterPlugins reports whether any PostFilter plugin is enabled.
func (f *Framework) HasPostFilterPlugins() bool { return len(f.postFilterPlugins) > 0 }

// HasScorePlugins reports whether any Score plugin is enabled.
func (f *Framework) HasScorePlugins() bool { return len(f.scorePlugins) > 0 }

// SetPodNominator sets the nominator after construction: the scheduling queue, which is the
// nominator, is built from the frameworks (it needs their QueueSortFunc).
func (f *Framework) SetPodNominator(n framework.PodNominator) { f.nominator = n }

// Close closes the plugins that hold resources (those implementing io.Closer).
func (f *Framework) Close() error {
	var errs []error
	for name, p := range f.plugins {
		if c, ok := p.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s failed to close: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// SnapshotSharedLister is the snapshot of the cluster for the current cycle.
func (f *Framework) SnapshotSharedLister() framework.SharedLister { return f.snapshotLister }

// ClientSet is the API client.
func (f *Framework) ClientSet() kubernetes.Interface { return f.clientSet }

// SharedInformerFactory is the informer factory.
func (f *Framework) SharedInformerFactory() informers.SharedInformerFactory { return f.informerFactory }

// EventRecorder records events about pods.
func (f *Framework) EventRecorder() events.EventRecorder { return f.eventRecorder }

// Parallelizer runs per-node work in parallel.
func (f *Framework) Parallelizer() framework.Parallelizer { return f.parallelizer }

// Nominator knows which pods are nominated to which node; nil when none is set.
func (f *Framework) Nominator() framework.PodNominator { return f.nominator }

// PluginsRunner is the Framework itself.
func (f *Framework) PluginsRunner() framework.PluginsRunner { return f }

// WaitingPods are the pods held at Permit.
func (f *Framework) WaitingPods() framework.WaitingPods { return f.waitingPods }
