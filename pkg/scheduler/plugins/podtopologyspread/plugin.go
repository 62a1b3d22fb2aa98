// Package podtopologyspread is the PodTopologySpread plugin of the scheduling cycle (seed 003):
// at PreFilter/Filter (findNodesThatFitPod) it keeps a pod's DoNotSchedule topology spread
// constraints — no domain may hold more than maxSkew matching pods above the least loaded one —
// and at PreScore/Score/NormalizeScore (prioritizeNodes) it prefers nodes whose domains hold
// fewer matching pods for ScheduleAnyway constraints. Pods without constraints of their own get
// the default ones (system: spread by hostname and zone) over the pods of the same owner.
//
// Default constraints need the pod's owners' selectors. kube-scheduler reads them from
// Services, ReplicationControllers, ReplicaSets and StatefulSets; this plugin reads whichever of
// those the API server serves (asked once, through discovery, when the plugin is built), so
// that an informer is never started for a resource that does not exist. A pod none of whose
// owners is known gets no default constraints, exactly as upstream treats a pod with no owner.
//
// Counting the matching pods of every node is what costs (100,000 pods at 5,000 nodes); the
// counts are remembered across cycles by node generation (countCache), so the pods of one
// workload, scheduled one after the other, recount only the nodes that changed.
package podtopologyspread

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/helper"
)

// Name is the plugin's name in the registry and in configurations.
const Name = "PodTopologySpread"

const (
	// ErrReasonConstraintsNotMatch is Filter's reason when placing the pod would exceed maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch is Filter's reason when the node lacks a topology key.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// systemDefaultConstraints are kube-scheduler's built-in defaults for pods without constraints.
var systemDefaultConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// Plugin is PodTopologySpread.
type Plugin struct {
	parallelizer framework.Parallelizer
	sharedLister framework.SharedLister
	// defaultConstraints apply to pods that have none; systemDefaulted says they are the
	// built-in ones, which score nodes without a zone label too.
	defaultConstraints []v1.TopologySpreadConstraint
	systemDefaulted    bool
	owners             ownerListers
	// counts remembers per-node counts of matching pods across cycles.
	counts countCache
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

// New builds the plugin from *configv1.PodTopologySpreadArgs, or nil for the defaults.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SnapshotSharedLister() == nil {
		return nil, fmt.Errorf("SnapshotSharedLister is nil")
	}
	args, err := getArgs(obj)
	if err != nil {
		return nil, err
	}
	if err := ValidateArgs(&args); err != nil {
		return nil, err
	}
	pl := &Plugin{
		parallelizer:       h.Parallelizer(),
		sharedLister:       h.SnapshotSharedLister(),
		defaultConstraints: args.DefaultConstraints,
	}
	if args.DefaultingType == configv1.SystemDefaulting {
		pl.defaultConstraints = systemDefaultConstraints
		pl.systemDefaulted = true
	}
	if len(pl.defaultConstraints) > 0 {
		pl.owners = servedOwnerListers(klog.FromContext(ctx), h)
	}
	return pl, nil
}

// getArgs returns the args with the v1 defaults applied.
func getArgs(obj runtime.Object) (configv1.PodTopologySpreadArgs, error) {
	var args configv1.PodTopologySpreadArgs
	if obj != nil {
		a, ok := obj.(*configv1.PodTopologySpreadArgs)
		if !ok {
			return args, fmt.Errorf("want args to be of type PodTopologySpreadArgs, got %T", obj)
		}
		if a != nil {
			args = *a
		}
	}
	if args.DefaultingType == "" {
		args.DefaultingType = configv1.SystemDefaulting
	}
	return args, nil
}

// ValidateArgs checks the args as kube-scheduler does: the defaulting type, and default
// constraints that are valid, unrepeated and without a selector (it is deduced per pod).
func ValidateArgs(args *configv1.PodTopologySpreadArgs) error {
	var errs field.ErrorList
	p := field.NewPath("defaultingType")
	switch args.DefaultingType {
	case configv1.SystemDefaulting:
		if len(args.DefaultConstraints) > 0 {
			errs = append(errs, field.Invalid(p, args.DefaultingType, "when .defaultConstraints are not empty"))
		}
	case configv1.ListDefaulting:
	default:
		errs = append(errs, field.NotSupported(p, args.DefaultingType, []string{string(configv1.SystemDefaulting), string(configv1.ListDefaulting)}))
	}
	cp := field.NewPath("defaultConstraints")
	for i, c := range args.DefaultConstraints {
		p := cp.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "not in valid range (0, inf)"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(c.TopologyKey, p.Child("topologyKey"))...)
		}
		switch c.WhenUnsatisfiable {
		case v1.DoNotSchedule, v1.ScheduleAnyway:
		case "":
			errs = append(errs, field.Required(p.Child("whenUnsatisfiable"), "can not be empty"))
		default:
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []string{string(v1.DoNotSchedule), string(v1.ScheduleAnyway)}))
		}
		if c.LabelSelector != nil {
			errs = append(errs, field.Forbidden(p.Child("labelSelector"), "constraint must not define a selector, as they deduced for each pod"))
		}
		for _, o := range args.DefaultConstraints[:i] {
			if o.TopologyKey == c.TopologyKey && o.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p, fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
	}
	return errs.ToAggregate()
}

// servedOwnerListers returns listers for the owner resources the API server serves. Asking an
// informer for a resource the server lacks would keep the informer factory from ever syncing.
func servedOwnerListers(logger klog.Logger, h framework.Handle) ownerListers {
	factory, client := h.SharedInformerFactory(), h.ClientSet()
	if factory == nil || client == nil {
		logger.V(2).Info("No informers: pods without topology spread constraints get no default constraints")
		return ownerListers{}
	}
	served := func(groupVersion string) sets.Set[string] {
		list, err := client.Discovery().ServerResourcesForGroupVersion(groupVersion)
		if err != nil {
			logger.V(2).Info("Owner resources not served; default topology spreading will not use them", "groupVersion", groupVersion, "err", err)
			return nil
		}
		names := sets.New[string]()
		for _, r := range list.APIResources {
			names.Insert(r.Name)
		}
		return names
	}
	var o ownerListers
	core, apps := served("v1"), served("apps/v1")
	if core.Has("services") {
		o.services = factory.Core().V1().Services().Lister()
	}
	if core.Has("replicationcontrollers") {
		o.rcs = factory.Core().V1().ReplicationControllers().Lister()
	}
	if apps.Has("replicasets") {
		o.replicaSets = factory.Apps().V1().ReplicaSets().Lister()
	}
	if apps.Has("statefulsets") {
		o.statefulSets = factory.Apps().V1().StatefulSets().Lister()
	}
	return o
}

// constraints returns the pod's constraints with this whenUnsatisfiable, or the default ones
// (selecting the pods of the same owners) when the pod has none at all.
func (pl *Plugin) constraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	kind := "hard"
	if action == v1.ScheduleAnyway {
		kind = "soft"
	}
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		cs, err := parseConstraints(pod.Spec.TopologySpreadConstraints, pod.Labels, action)
		if err != nil {
			return nil, fmt.Errorf("obtaining pod's %s topology spread constraints: %w", kind, err)
		}
		return cs, nil
	}
	cs, err := parseConstraints(pl.defaultConstraints, pod.Labels, action)
	if err != nil {
		return nil, fmt.Errorf("setting default %s topology spread constraints: %w", kind, err)
	}
	if len(cs) == 0 {
		return nil, nil
	}
	selector := pl.owners.defaultSelector(pod)
	if selector.Empty() {
		return nil, nil
	}
	for i := range cs {
		cs[i].Selector = selector
	}
	return cs, nil
}

// EventsToRegister names the events that may make a pod this plugin rejected fit: a matching
// pod leaving (or arriving, for minDomains and skew), labels changing, nodes gaining or losing
// topology keys or taints.
//
// kube-scheduler registers the pod's own label and toleration updates as a "TargetPod" event;
// berth's framework has no such resource, so they are registered as UnscheduledPod updates
// and the hint skips every pod but the rejected one itself.
func (pl *Plugin) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete}, QueueingHintFn: pl.isSchedulableAfterAssignedPodChange},
		{Event: framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodToleration | framework.UpdatePodLabel}, QueueingHintFn: pl.isSchedulableAfterTargetPodChange},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

func (pl *Plugin) isSchedulableAfterTargetPodChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := helper.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if oldPod == nil || newPod == nil || newPod.UID != pod.UID {
		// Another unscheduled pod: it counts nowhere until it is assigned.
		return framework.QueueSkip, nil
	}
	cs, err := pl.constraints(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	if !equality.Semantic.DeepEqual(oldPod.Spec.Tolerations, newPod.Spec.Tolerations) && anyHonorsTaints(cs) {
		logger.V(5).Info("The pod got new tolerations, which may include more nodes in its domains", "pod", klog.KObj(pod))
		return framework.Queue, nil
	}
	return labelChangeHint(logger, oldPod, newPod, cs), nil
}

func anyHonorsTaints(cs []constraint) bool {
	for i := range cs {
		if cs[i].NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
			return true
		}
	}
	return false
}

// assignedOrNominated reports whether a pod counts in the spreading of pods in namespace ns.
func assignedOrNominated(p *v1.Pod, ns string) bool {
	return (p.Spec.NodeName != "" || p.Status.NominatedNodeName != "") && p.Namespace == ns
}

func (pl *Plugin) isSchedulableAfterAssignedPodChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := helper.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if (newPod != nil && !assignedOrNominated(newPod, pod.Namespace)) || (oldPod != nil && !assignedOrNominated(oldPod, pod.Namespace)) {
		return framework.QueueSkip, nil
	}
	cs, err := pl.constraints(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	switch {
	case oldPod != nil && newPod != nil:
		return labelChangeHint(logger, oldPod, newPod, cs), nil
	case newPod != nil:
		if anySelects(cs, newPod.Labels) {
			logger.V(5).Info("A matching pod was assigned", "pod", klog.KObj(pod), "assignedPod", klog.KObj(newPod))
			return framework.Queue, nil
		}
	case oldPod != nil:
		if anySelects(cs, oldPod.Labels) {
			logger.V(5).Info("A matching pod was deleted", "pod", klog.KObj(pod), "deletedPod", klog.KObj(oldPod))
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// labelChangeHint queues when the change makes the pod match a constraint it did not, or the
// reverse.
func labelChangeHint(logger klog.Logger, oldPod, newPod *v1.Pod, cs []constraint) framework.QueueingHint {
	if equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) {
		return framework.QueueSkip
	}
	for i := range cs {
		if cs[i].Selector.Matches(labels.Set(oldPod.Labels)) != cs[i].Selector.Matches(labels.Set(newPod.Labels)) {
			logger.V(5).Info("A pod's labels changed whether it matches the topology spread constraints", "pod", klog.KObj(newPod))
			return framework.Queue
		}
	}
	return framework.QueueSkip
}

func (pl *Plugin) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := helper.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	cs, err := pl.constraints(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	oldHas := oldNode != nil && hasAllTopologyKeys(oldNode.Labels, cs)
	newHas := newNode != nil && hasAllTopologyKeys(newNode.Labels, cs)
	switch {
	case oldNode != nil && newNode != nil:
		if oldHas != newHas {
			logger.V(5).Info("A node gained or lost a topology key", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
		if newHas && (topologyValuesChanged(oldNode.Labels, newNode.Labels, cs) || !equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints)) {
			logger.V(5).Info("A node moved domain or changed taints", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	case newNode != nil:
		if newHas {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	default:
		if oldHas {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
}

func topologyValuesChanged(oldLabels, newLabels map[string]string, cs []constraint) bool {
	for i := range cs {
		if oldLabels[cs[i].TopologyKey] != newLabels[cs[i].TopologyKey] {
			return true
		}
	}
	return false
}
