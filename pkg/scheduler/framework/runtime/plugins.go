package runtime

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// extensionPoint ties a point's PluginSet in the configuration to the Framework's list of
// plugins for it.
type extensionPoint struct {
	// kind names the plugin interface in errors, as kube-scheduler does ("FilterPlugin").
	kind string
	set  func(*configv1.Plugins) *configv1.PluginSet
	fits func(framework.Plugin) bool
	// add appends a plugin to the Framework's list; nil for Score, whose plugins carry
	// weights.
	add func(*Framework, framework.Plugin)
}

func point[T framework.Plugin](kind string, set func(*configv1.Plugins) *configv1.PluginSet, list func(*Framework) *[]T) extensionPoint {
	return extensionPoint{
		kind: kind,
		set:  set,
		fits: func(p framework.Plugin) bool { _, ok := p.(T); return ok },
		add:  func(f *Framework, p framework.Plugin) { l := list(f); *l = append(*l, p.(T)) },
	}
}

// extensionPoints are all points, in the order of the flow. Score is handled on its own
// since its plugins carry weights.
var extensionPoints = []extensionPoint{
	point("PreEnqueuePlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.PreEnqueue }, func(f *Framework) *[]framework.PreEnqueuePlugin { return &f.preEnqueuePlugins }),
	point("QueueSortPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.QueueSort }, func(f *Framework) *[]framework.QueueSortPlugin { return &f.queueSortPlugins }),
	point("PreFilterPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.PreFilter }, func(f *Framework) *[]framework.PreFilterPlugin { return &f.preFilterPlugins }),
	point("FilterPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.Filter }, func(f *Framework) *[]framework.FilterPlugin { return &f.filterPlugins }),
	point("PostFilterPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.PostFilter }, func(f *Framework) *[]framework.PostFilterPlugin { return &f.postFilterPlugins }),
	point("PreScorePlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.PreScore }, func(f *Framework) *[]framework.PreScorePlugin { return &f.preScorePlugins }),
	{
		kind: "ScorePlugin",
		set:  func(p *configv1.Plugins) *configv1.PluginSet { return &p.Score },
		fits: func(p framework.Plugin) bool { _, ok := p.(framework.ScorePlugin); return ok },
	},
	point("ReservePlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.Reserve }, func(f *Framework) *[]framework.ReservePlugin { return &f.reservePlugins }),
	point("PermitPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.Permit }, func(f *Framework) *[]framework.PermitPlugin { return &f.permitPlugins }),
	point("PreBindPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.PreBind }, func(f *Framework) *[]framework.PreBindPlugin { return &f.preBindPlugins }),
	point("BindPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.Bind }, func(f *Framework) *[]framework.BindPlugin { return &f.bindPlugins }),
	point("PostBindPlugin", func(p *configv1.Plugins) *configv1.PluginSet { return &p.PostBind }, func(f *Framework) *[]framework.PostBindPlugin { return &f.postBindPlugins }),
}

// buildPlugins builds every plugin the configuration names, once, and fills the per-point
// lists.
func (f *Framework) buildPlugins(ctx context.Context, registry framework.Registry, cfg *configv1.Plugins, args map[string]runtime.Object) error {
	// Build in order of first mention, so that the order of EnqueueExtensions (and of any
	// side effects of the factories) does not depend on map iteration.
	for _, name := range mentionedPlugins(cfg) {
		factory, ok := registry[name]
		if !ok {
			continue // reported below, at the first point that enables it
		}
		p, err := factory(ctx, args[name], f)
		if err != nil {
			return fmt.Errorf("initializing plugin %q: %w", name, err)
		}
		f.plugins[name] = p
		if canReject(p) {
			if ext, ok := p.(framework.EnqueueExtensions); ok {
				f.enqueueExtensions = append(f.enqueueExtensions, ext)
			} else {
				f.enqueueExtensions = append(f.enqueueExtensions, allEvents{name: p.Name()})
			}
		}
	}

	weights, err := f.scoreWeights(append(append([]configv1.Plugin(nil), cfg.Score.Enabled...), cfg.MultiPoint.Enabled...))
	if err != nil {
		return fmt.Errorf("score plugins: %w", err)
	}
	for _, ep := range extensionPoints {
		names, err := f.resolve(ep, *ep.set(cfg), cfg.MultiPoint.Enabled)
		if err != nil {
			return err
		}
		out := ep.set(&f.enabled)
		for _, name := range names {
			p := f.plugins[name]
			if ep.add != nil {
				ep.add(f, p)
				out.Enabled = append(out.Enabled, configv1.Plugin{Name: name})
				continue
			}
			w := weights[name]
			f.scorePlugins = append(f.scorePlugins, weightedScorePlugin{ScorePlugin: p.(framework.ScorePlugin), weight: int64(w)})
			out.Enabled = append(out.Enabled, configv1.Plugin{Name: name, Weight: &w})
		}
	}
	return nil
}

// mentionedPlugins lists every plugin enabled anywhere in cfg, MultiPoint first.
func mentionedPlugins(cfg *configv1.Plugins) []string {
	var names []string
	seen := sets.New[string]()
	mention := func(set configv1.PluginSet) {
		for _, p := range set.Enabled {
			if !seen.Has(p.Name) {
				seen.Insert(p.Name)
				names = append(names, p.Name)
			}
		}
	}
	mention(cfg.MultiPoint)
	for _, ep := range extensionPoints {
		mention(*ep.set(cfg))
	}
	return names
}

// canReject reports whether a plugin can make a pod unschedulable, and so must tell the
// queue which events may undo that.
func canReject(p framework.Plugin) bool {
	switch p.(type) {
	case framework.PreEnqueuePlugin, framework.PreFilterPlugin, framework.FilterPlugin, framework.ReservePlugin, framework.PermitPlugin:
		return true
	}
	return false
}

// allEvents stands in for the EnqueueExtensions of a plugin that does not say which events
// matter to it: every event may.
type allEvents struct{ name string }

func (a allEvents) Name() string { return a.name }

func (a allEvents) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{{Event: framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All}}}, nil
}

// resolve returns the plugins enabled at one point, in order. Explicitly enabled plugins must
// exist, implement the point and appear once. MultiPoint plugins are added where they
// implement the point unless the point disables them (or "*"). The order is kube-scheduler's:
// first the plugins enabled both explicitly and through MultiPoint (the explicit entry
// overrides, in its explicit order), then the MultiPoint-only ones, then the other explicit
// ones.
func (f *Framework) resolve(ep extensionPoint, set configv1.PluginSet, multiPoint []configv1.Plugin) ([]string, error) {
	explicit := make([]string, 0, len(set.Enabled))
	explicitSet := sets.New[string]()
	for _, e := range set.Enabled {
		p, ok := f.plugins[e.Name]
		if !ok {
			return nil, fmt.Errorf("%s %q does not exist", ep.kind, e.Name)
		}
		if !ep.fits(p) {
			return nil, fmt.Errorf("plugin %q does not extend %s plugin", e.Name, ep.kind)
		}
		if explicitSet.Has(e.Name) {
			return nil, fmt.Errorf("plugin %q already registered as %q", e.Name, ep.kind)
		}
		explicitSet.Insert(e.Name)
		explicit = append(explicit, e.Name)
	}
	if len(multiPoint) == 0 {
		return explicit, nil
	}
	disabled := sets.New[string]()
	for _, d := range set.Disabled {
		disabled.Insert(d.Name)
	}
	if disabled.Has("*") {
		return explicit, nil
	}

	overridden := sets.New[string]()
	var fromMultiPoint []string
	multiPointSet := sets.New[string]()
	for _, e := range multiPoint {
		p, ok := f.plugins[e.Name]
		if !ok {
			return nil, fmt.Errorf("%s %q does not exist", ep.kind, e.Name)
		}
		switch {
		case !ep.fits(p), disabled.Has(e.Name):
			continue
		case explicitSet.Has(e.Name):
			overridden.Insert(e.Name)
		case multiPointSet.Has(e.Name):
			return nil, fmt.Errorf("plugin %q already registered as %q", e.Name, ep.kind)
		default:
			multiPointSet.Insert(e.Name)
			fromMultiPoint = append(fromMultiPoint, e.Name)
		}
	}

	out := make([]string, 0, len(explicit)+len(fromMultiPoint))
	for _, name := range explicit {
		if overridden.Has(name) {
			out = append(out, name)
		}
	}
	out = append(out, fromMultiPoint...)
	for _, name := range explicit {
		if !overridden.Has(name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// scoreWeights gives every Score plugin in plugins (Score's then MultiPoint's entries, so that
// an explicit Score weight wins) its weight: unset or 0 means 1, negative is an error, and
// the weights together must keep the total score within int64.
func (f *Framework) scoreWeights(plugins []configv1.Plugin) (map[string]int32, error) {
	weights := map[string]int32{}
	var total int64
	for _, e := range plugins {
		if _, ok := f.plugins[e.Name].(framework.ScorePlugin); !ok {
			continue
		}
		if _, ok := weights[e.Name]; ok {
			continue
		}
		w := int32(1)
		if e.Weight != nil && *e.Weight != 0 {
			w = *e.Weight
		}
		if w < 0 {
			return nil, fmt.Errorf("score plugin %q has a negative weight %d", e.Name, w)
		}
		if int64(w)*framework.MaxNodeScore > framework.MaxTotalScore-total {
			return nil, fmt.Errorf("total score of Score plugins could overflow")
		}
		total += int64(w) * framework.MaxNodeScore
		weights[e.Name] = w
	}
	return weights, nil
}

// ListPlugins returns the plugins enabled at each extension point, in the order they run,
// with the weights of the Score plugins. The result is a copy.
func (f *Framework) ListPlugins() *configv1.Plugins {
	out := &configv1.Plugins{}
	for _, ep := range extensionPoints {
		src := ep.set(&f.enabled).Enabled
		if len(src) == 0 {
			continue
		}
		dst := make([]configv1.Plugin, len(src))
		for i, p := range src {
			dst[i] = configv1.Plugin{Name: p.Name}
			if p.Weight != nil {
				w := *p.Weight
				dst[i].Weight = &w
			}
		}
		ep.set(out).Enabled = dst
	}
	return out
}
