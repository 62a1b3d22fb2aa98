// Package nodeaffinity is the NodeAffinity plugin. In findNodesThatFitPod it keeps a pod to
// the nodes its spec.nodeSelector and required node affinity select (PreFilter narrows the
// search at once when the affinity names nodes by metadata.name); in prioritizeNodes it
// prefers nodes that match heavier preferred terms. The scheduler's configuration can add an
// affinity that every pod gets (NodeAffinityArgs.addedAffinity).
package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/helper"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "NodeAffinity"
	// ErrReasonPod is the Filter reason for a node the pod's nodeSelector or required node
	// affinity does not select.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
	// errReasonEnforced is the Filter reason for a node the added affinity does not select.
	errReasonEnforced = "node(s) didn't match scheduler-enforced node affinity"
	// errReasonConflict is the PreFilter reason when the terms' metadata.name requirements
	// leave no node.
	errReasonConflict = "pod affinity terms conflict"

	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// NodeAffinity filters and scores nodes by the pod's node selector and node affinity, and by
// the added affinity of the configuration.
type NodeAffinity struct {
	// addedSelector is nil when the configuration adds no required affinity.
	addedSelector *nodeSelector
	// addedPreferred is nil when the configuration adds no preferred terms.
	addedPreferred preferredTerms
}

var (
	_ framework.PreFilterPlugin   = &NodeAffinity{}
	_ framework.FilterPlugin      = &NodeAffinity{}
	_ framework.PreScorePlugin    = &NodeAffinity{}
	_ framework.ScorePlugin       = &NodeAffinity{}
	_ framework.ScoreExtensions   = &NodeAffinity{}
	_ framework.EnqueueExtensions = &NodeAffinity{}
)

// New builds the plugin from *configv1.NodeAffinityArgs, or nil (no added affinity; the v1
// args have no defaults). An added affinity that does not parse is an error.
func New(_ context.Context, obj runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	args, err := getArgs(obj)
	if err != nil {
		return nil, err
	}
	pl := &NodeAffinity{}
	if args.AddedAffinity == nil {
		return pl, nil
	}
	path := field.NewPath("addedAffinity")
	var errs []error
	if ns := args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
		added := newNodeSelector(ns, path.Child("requiredDuringSchedulingIgnoredDuringExecution"))
		pl.addedSelector = &added
		if err := added.err(); err != nil {
			errs = append(errs, err)
		}
	}
	if terms := args.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 0 {
		pl.addedPreferred, err = newPreferredTerms(terms, path.Child("preferredDuringSchedulingIgnoredDuringExecution"))
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := utilerrors.Flatten(utilerrors.NewAggregate(errs)); err != nil {
		return nil, err
	}
	return pl, nil
}

func getArgs(obj runtime.Object) (*configv1.NodeAffinityArgs, error) {
	if obj == nil {
		return &configv1.NodeAffinityArgs{}, nil
	}
	args, ok := obj.(*configv1.NodeAffinityArgs)
	if !ok {
		return nil, fmt.Errorf("args are not of type NodeAffinityArgs, got %T", obj)
	}
	if args == nil {
		return &configv1.NodeAffinityArgs{}, nil
	}
	return args, nil
}

// Name returns Name.
func (pl *NodeAffinity) Name() string { return Name }

// preFilterState is the pod's parsed nodeSelector and required affinity.
type preFilterState struct {
	required requiredAffinity
}

// Clone shares the state: it does not depend on other pods.
func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter parses the pod's requirements once. When every required term names nodes by
// metadata.name, only those nodes are worth filtering.
func (pl *NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	required := requiredTerms(pod)
	if required == nil && pl.addedSelector == nil && pod.Spec.NodeSelector == nil {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, &preFilterState{required: newRequiredAffinity(pod)})
	if required == nil || len(required.NodeSelectorTerms) == 0 {
		return nil, nil
	}
	names := nodeNamesOf(required.NodeSelectorTerms)
	if names == nil {
		return nil, nil
	}
	if len(names) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, errReasonConflict)
	}
	return &framework.PreFilterResult{NodeNames: names}, nil
}

func requiredTerms(pod *v1.Pod) *v1.NodeSelector {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// nodeNamesOf returns the nodes that the terms can select, when each term limits
// metadata.name with In: per term the intersection of its In lists, over the ORed terms the
// union. nil means some term allows any node; empty means the terms allow none.
func nodeNamesOf(terms []v1.NodeSelectorTerm) sets.Set[string] {
	var names sets.Set[string]
	for _, t := range terms {
		var termNames sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			if termNames == nil {
				termNames = sets.New(r.Values...)
			} else {
				termNames = termNames.Intersection(sets.New(r.Values...))
			}
		}
		if termNames == nil {
			return nil
		}
		names = names.Union(termNames)
	}
	return names
}

// PreFilterExtensions returns nil: the state does not depend on other pods.
func (pl *NodeAffinity) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter rejects a node that the added affinity or the pod's own requirements do not select.
// Preemption changes no labels, hence UnschedulableAndUnresolvable. Terms that do not parse
// select nothing.
func (pl *NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if pl.addedSelector != nil {
		if ok, _ := pl.addedSelector.match(node); !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, errReasonEnforced)
		}
	}
	var required requiredAffinity
	if s, err := getPreFilterState(state); err == nil {
		required = s.required
	} else {
		// PreFilter did not run (it is disabled, or skipped and the caller filters anyway).
		required = newRequiredAffinity(pod)
	}
	if ok, _ := required.match(node); !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

func getPreFilterState(state *framework.CycleState) (*preFilterState, error) {
	if state == nil {
		return nil, framework.ErrNotFound
	}
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, err
	}
	s, ok := data.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("invalid PreFilter state, got type %T", data)
	}
	return s, nil
}

// preScoreState is the pod's parsed preferred terms.
type preScoreState struct {
	preferred preferredTerms
}

// Clone shares the state: it does not depend on other pods.
func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore parses the pod's preferred terms; with none, and none added, Score is skipped.
func (pl *NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	preferred, err := podPreferredTerms(pod)
	if err != nil {
		return framework.AsStatus(err)
	}
	if preferred == nil && pl.addedPreferred == nil {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{preferred: preferred})
	return nil
}

// podPreferredTerms parses the pod's preferred terms; nil when it has none.
func podPreferredTerms(pod *v1.Pod) (preferredTerms, error) {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		return newPreferredTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, nil)
	}
	return nil, nil
}

// Score sums the weights of the preferred terms, the pod's and the added ones, that the node
// matches.
func (pl *NodeAffinity) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	score := pl.addedPreferred.score(node)
	var preferred preferredTerms
	if data, err := state.Read(preScoreStateKey); err == nil {
		s, ok := data.(*preScoreState)
		if !ok {
			return 0, framework.AsStatus(fmt.Errorf("invalid PreScore state, got type %T", data))
		}
		preferred = s.preferred
	} else {
		// PreScore did not run: parse here.
		if preferred, err = podPreferredTerms(pod); err != nil {
			return 0, framework.AsStatus(err)
		}
	}
	return score + preferred.score(node), nil
}

// ScoreExtensions returns the plugin, which normalizes its scores.
func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore scales the sums so that the best node gets 100.
func (pl *NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return helper.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}

// EventsToRegister: a node that appears or changes labels may now be selected.
func (pl *NodeAffinity) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod when the node, new or updated, now meets the
// added affinity and the pod's requirements, and (for an update) did not meet the pod's
// before.
func (pl *NodeAffinity) isSchedulableAfterNodeChange(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.QueueSkip, nil
	}
	if pl.addedSelector != nil {
		if ok, _ := pl.addedSelector.match(newNode); !ok {
			return framework.QueueSkip, nil
		}
	}
	required := newRequiredAffinity(pod)
	matches, err := required.match(newNode)
	if err != nil {
		return framework.Queue, err
	}
	if !matches {
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		return framework.Queue, nil
	}
	matched, err := required.match(oldNode)
	if err != nil {
		return framework.Queue, err
	}
	if matched {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
