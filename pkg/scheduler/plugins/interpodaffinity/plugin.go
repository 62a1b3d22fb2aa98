// Package interpodaffinity is the InterPodAffinity plugin of the scheduling cycle (seed 003).
// At PreFilter/Filter (findNodesThatFitPod) it keeps required pod affinity (the node's domain
// must hold a pod matching all the pod's terms), required anti-affinity (it must hold no pod
// matching a term) and the required anti-affinity of the pods already placed (the pod must not
// land in a domain whose pods reject it). At PreScore/Score/NormalizeScore (prioritizeNodes) it
// sums preferred terms both ways, and existing pods' required affinity with
// hardPodAffinityWeight, per domain.
//
// Terms with a namespaceSelector need the namespaces' labels, read from the namespace informer
// when the handle has an informer factory. Without one, a namespaceSelector selects no
// namespace (an empty one still selects all): only the namespaces a term lists count.
//
// Going over every pod of the cluster for the pod's terms, and over every pod with terms for
// the symmetric ones, is what costs at 5,000 nodes; the per-node answers are remembered across
// cycles by node generation (nodeMemo), so the pods of one workload, scheduled one after the
// other, redo only the nodes that changed.
package interpodaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/helper"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "InterPodAffinity"

// Plugin is InterPodAffinity.
type Plugin struct {
	parallelizer framework.Parallelizer
	sharedLister framework.SharedLister
	// nsLister is nil when the handle has no informers.
	nsLister listersv1.NamespaceLister
	// hardPodAffinityWeight scores an existing pod's required affinity term that the incoming
	// pod matches, as if it were a preferred term of that weight.
	hardPodAffinityWeight int32
	// ignorePreferredTermsOfExistingPods skips scoring for pods without preferred terms.
	ignorePreferredTermsOfExistingPods bool
	// memo remembers per-node answers across cycles.
	memo nodeMemo
}

var (
	_ framework.PreFilterPlugin     = &Plugin{}
	_ framework.PreFilterExtensions = &Plugin{}
	_ framework.FilterPlugin        = &Plugin{}
	_ framework.PreScorePlugin      = &Plugin{}
	_ framework.ScorePlugin         = &Plugin{}
	_ framework.ScoreExtensions     = &Plugin{}
	_ framework.EnqueueExtensions   = &Plugin{}
)

// Name returns Name.
func (pl *Plugin) Name() string { return Name }

// New builds the plugin from *configv1.InterPodAffinityArgs, or nil for the defaults
// (hardPodAffinityWeight 1).
func New(_ context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SnapshotSharedLister() == nil {
		return nil, fmt.Errorf("SnapshotSharedLister is nil")
	}
	args := configv1.InterPodAffinityArgs{}
	if obj != nil {
		a, ok := obj.(*configv1.InterPodAffinityArgs)
		if !ok {
			return nil, fmt.Errorf("want args to be of type InterPodAffinityArgs, got %T", obj)
		}
		if a != nil {
			args = *a
		}
	}
	weight := int32(1)
	if args.HardPodAffinityWeight != nil {
		weight = *args.HardPodAffinityWeight
	}
	if err := ValidateHardPodAffinityWeight(weight); err != nil {
		return nil, err
	}
	pl := &Plugin{
		parallelizer:                       h.Parallelizer(),
		sharedLister:                       h.SnapshotSharedLister(),
		hardPodAffinityWeight:              weight,
		ignorePreferredTermsOfExistingPods: args.IgnorePreferredTermsOfExistingPods,
	}
	if f := h.SharedInformerFactory(); f != nil {
		pl.nsLister = f.Core().V1().Namespaces().Lister()
	}
	return pl, nil
}

// ValidateHardPodAffinityWeight checks that the weight is in [0, 100], as kube-scheduler does.
func ValidateHardPodAffinityWeight(w int32) error {
	if w < 0 || w > 100 {
		return field.Invalid(field.NewPath("hardPodAffinityWeight"), w, "not in valid range [0, 100]")
	}
	return nil
}

// mergeNamespaces resolves the namespaceSelector of one of the incoming pod's terms into its
// namespace list, so that matching existing pods needs no namespace lookups. An empty selector
// (all namespaces) is kept as it is.
func (pl *Plugin) mergeNamespaces(t *framework.AffinityTerm) error {
	if t.NamespaceSelector.Empty() {
		return nil
	}
	if _, selectable := t.NamespaceSelector.Requirements(); !selectable {
		return nil // labels.Nothing: no selector was given
	}
	if pl.nsLister != nil {
		nss, err := pl.nsLister.List(t.NamespaceSelector)
		if err != nil {
			return err
		}
		for _, ns := range nss {
			t.Namespaces.Insert(ns.Name)
		}
	}
	t.NamespaceSelector = labels.Nothing()
	return nil
}

// namespaceLabels returns a copy of the labels of namespace ns, empty when it is unknown.
func (pl *Plugin) namespaceLabels(logger klog.Logger, ns string) labels.Set {
	if pl.nsLister == nil {
		return nil
	}
	n, err := pl.nsLister.Get(ns)
	if err != nil {
		logger.V(3).Info("Getting namespace, assuming empty set of namespace labels", "namespace", ns, "err", err)
		return nil
	}
	return labels.Merge(n.Labels, nil)
}

// parsedPodInfo returns the pod's PodInfo with its terms parsed, or the parse error.
func parsedPodInfo(pod *v1.Pod) (*framework.PodInfo, error) {
	pi := framework.NewPodInfo(pod)
	return pi, pi.ParseError
}

// podMatchesAllTerms reports whether pod matches every term; false for no terms. The terms
// are the incoming pod's, with namespace selectors already merged, so no namespace labels.
func podMatchesAllTerms(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

// podMatchesAnyTerm reports whether pod matches one of the terms.
func podMatchesAnyTerm(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	for i := range terms {
		if terms[i].Matches(pod, nil) {
			return true
		}
	}
	return false
}

// until runs do(i) for i in [0, n) on the handle's parallelizer, or in order without one.
func (pl *Plugin) until(ctx context.Context, n int, do func(int)) {
	if pl.parallelizer == nil {
		for i := 0; i < n; i++ {
			do(i)
		}
		return
	}
	pl.parallelizer.Until(ctx, n, do, Name)
}

// EventsToRegister names the events that may make a pod this plugin rejected fit: a pod it
// needs arriving, a pod it (or that) rejects leaving, labels changing, nodes joining or moving
// domain.
//
// kube-scheduler registers the pod's own label updates as a "TargetPod" event; berth's
// framework has no such resource, so they are registered as UnscheduledPod updates and the
// hint skips every pod but the rejected one itself.
func (pl *Plugin) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete}, QueueingHintFn: pl.isSchedulableAfterAssignedPodChange},
		{Event: framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodLabel}, QueueingHintFn: pl.isSchedulableAfterTargetPodUpdateLabel},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

func unassigned(p *v1.Pod) bool { return p.Spec.NodeName == "" && p.Status.NominatedNodeName == "" }

func (pl *Plugin) isSchedulableAfterAssignedPodChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := helper.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	// A change of nodeName or nominatedNodeName comes as Add/Delete, so an unassigned pod on
	// either side is irrelevant.
	if (newPod != nil && unassigned(newPod)) || (oldPod != nil && unassigned(oldPod)) {
		return framework.QueueSkip, nil
	}
	pi, err := parsedPodInfo(pod)
	if err != nil {
		return framework.Queue, err
	}
	// Affinity needs one pod that matches all terms, anti-affinity only one term matched.
	switch {
	case oldPod != nil && newPod != nil:
		if !podMatchesAllTerms(pi.RequiredAffinityTerms, oldPod) && podMatchesAllTerms(pi.RequiredAffinityTerms, newPod) {
			logger.V(5).Info("A pod now matches the pod's affinity", "pod", klog.KObj(pod), "updatedPod", klog.KObj(newPod))
			return framework.Queue, nil
		}
		if podMatchesAnyTerm(pi.RequiredAntiAffinityTerms, oldPod) && !podMatchesAnyTerm(pi.RequiredAntiAffinityTerms, newPod) {
			logger.V(5).Info("A pod no longer matches the pod's anti-affinity", "pod", klog.KObj(pod), "updatedPod", klog.KObj(newPod))
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	case newPod != nil:
		if podMatchesAllTerms(pi.RequiredAffinityTerms, newPod) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
	if podMatchesAnyTerm(pi.RequiredAntiAffinityTerms, oldPod) {
		return framework.Queue, nil
	}
	deleted, err := parsedPodInfo(oldPod)
	if err != nil {
		return framework.Queue, err
	}
	if podMatchesAnyTerm(deleted.RequiredAntiAffinityTerms, pod) {
		logger.V(5).Info("A pod whose anti-affinity the pod matches was deleted", "pod", klog.KObj(pod), "deletedPod", klog.KObj(oldPod))
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// isSchedulableAfterTargetPodUpdateLabel queues the pod when its own labels change: an
// existing pod's anti-affinity may no longer reject it.
func (pl *Plugin) isSchedulableAfterTargetPodUpdateLabel(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, newPod, err := helper.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newPod == nil || newPod.UID != pod.UID {
		return framework.QueueSkip, nil
	}
	logger.V(5).Info("The pod's labels changed; it may be schedulable now", "pod", klog.KObj(pod))
	return framework.Queue, nil
}

func (pl *Plugin) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.QueueSkip, nil
	}
	pi, err := parsedPodInfo(pod)
	if err != nil {
		return framework.Queue, err
	}
	// Affinity: a node that gains the topology key, or moves to another domain, may be in a
	// domain with the pods the pod needs.
	for _, t := range pi.RequiredAffinityTerms {
		newValue, newHas := newNode.Labels[t.TopologyKey]
		if oldNode == nil {
			if newHas {
				return framework.Queue, nil
			}
			continue
		}
		oldValue, oldHas := oldNode.Labels[t.TopologyKey]
		if newHas && (!oldHas || oldValue != newValue) {
			logger.V(5).Info("A node joined a domain of the pod's affinity", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
	}
	// Anti-affinity: any new node may (a node without the key always can) host the pod; an
	// existing one helps when it leaves the domain.
	for _, t := range pi.RequiredAntiAffinityTerms {
		if oldNode == nil {
			return framework.Queue, nil
		}
		oldValue, oldHas := oldNode.Labels[t.TopologyKey]
		newValue, newHas := newNode.Labels[t.TopologyKey]
		if oldHas && (!newHas || oldValue != newValue) {
			logger.V(5).Info("A node left a domain of the pod's anti-affinity", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}
