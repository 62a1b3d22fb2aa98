package config

import (
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
)

// DefaultPlugins is the default profile of kube-scheduler 1.37 (without the volume and
// dynamic-resource plugins, which need APIs berth does not serve), in its order: the order of
// Filter plugins is the order of this list, and the weights are the Score weights.
func DefaultPlugins() *configv1.Plugins {
	return &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{
		{Name: "SchedulingGates"},
		{Name: "PrioritySort"},
		{Name: "NodeName"},
		{Name: "NodeUnschedulable"},
		{Name: "TaintToleration", Weight: ptr.To[int32](3)},
		{Name: "NodeAffinity", Weight: ptr.To[int32](2)},
		{Name: "NodePorts"},
		{Name: "NodeResourcesFit", Weight: ptr.To[int32](1)},
		{Name: "PodTopologySpread", Weight: ptr.To[int32](2)},
		{Name: "InterPodAffinity", Weight: ptr.To[int32](2)},
		{Name: "DefaultPreemption"},
		{Name: "NodeResourcesBalancedAllocation", Weight: ptr.To[int32](1)},
		{Name: "ImageLocality", Weight: ptr.To[int32](1)},
		{Name: "DefaultBinder"},
	}}}
}

// mergePlugins lays a profile's plugin configuration over the defaults, extension point by
// extension point: a custom plugin replaces a default of the same name in its place, disabled
// ones (or "*") drop defaults, and other custom plugins come after the defaults.
func mergePlugins(defaults, custom *configv1.Plugins) *configv1.Plugins {
	if custom == nil {
		return defaults
	}
	out := *custom
	out.MultiPoint = mergeSet(defaults.MultiPoint, custom.MultiPoint)
	out.PreEnqueue = mergeSet(defaults.PreEnqueue, custom.PreEnqueue)
	out.QueueSort = mergeSet(defaults.QueueSort, custom.QueueSort)
	out.PreFilter = mergeSet(defaults.PreFilter, custom.PreFilter)
	out.Filter = mergeSet(defaults.Filter, custom.Filter)
	out.PostFilter = mergeSet(defaults.PostFilter, custom.PostFilter)
	out.PreScore = mergeSet(defaults.PreScore, custom.PreScore)
	out.Score = mergeSet(defaults.Score, custom.Score)
	out.Reserve = mergeSet(defaults.Reserve, custom.Reserve)
	out.Permit = mergeSet(defaults.Permit, custom.Permit)
	out.PreBind = mergeSet(defaults.PreBind, custom.PreBind)
	out.Bind = mergeSet(defaults.Bind, custom.Bind)
	out.PostBind = mergeSet(defaults.PostBind, custom.PostBind)
	return &out
}

func mergeSet(defaults, custom configv1.PluginSet) configv1.PluginSet {
	disabled := sets.New[string]()
	var out configv1.PluginSet
	for _, p := range custom.Disabled {
		disabled.Insert(p.Name)
		out.Disabled = append(out.Disabled, configv1.Plugin{Name: p.Name})
	}
	customByName := map[string]configv1.Plugin{}
	for _, p := range custom.Enabled {
		customByName[p.Name] = p
	}
	used := sets.New[string]()
	if !disabled.Has("*") {
		for _, p := range defaults.Enabled {
			if disabled.Has(p.Name) {
				continue
			}
			if c, ok := customByName[p.Name]; ok {
				p = c
				used.Insert(p.Name)
			}
			out.Enabled = append(out.Enabled, p)
		}
	}
	for _, p := range custom.Enabled {
		if !used.Has(p.Name) {
			out.Enabled = append(out.Enabled, p)
		}
	}
	return out
}
