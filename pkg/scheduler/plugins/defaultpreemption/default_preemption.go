// Package defaultpreemption is the PostFilter step of seed 003's scheduling cycle: when
// findNodesThatFitPod finds no node for a pod, it looks for a node where deleting
// lower-priority pods (the victims) would make the pod fit, deletes them, and nominates the
// node, so that the pod is scheduled there once the victims are gone.
//
// The flow, as kube-scheduler's DefaultPreemption with SchedulerAsyncPreemption off:
//
//	PodEligibleToPreemptOthers → findCandidates (dry run: SelectVictimsOnNode on a sample of the
//	nodes Filter found Unschedulable, in parallel) → pickOneNodeForPreemption →
//	prepareCandidate (reject or delete the victims, clear lower-priority nominations) →
//	PostFilterResult{nominated node}
package defaultpreemption

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Name is the plugin's name in kube-scheduler's configuration.
const Name = "DefaultPreemption"

// Messages users see, worded as kube-scheduler words them.
const (
	msgPreemptNever      = "not eligible due to preemptionPolicy=Never."
	msgTerminatingOnNode = "not eligible due to a terminating pod on the nominated node."
	msgNoVictims         = "No preemption victims found for incoming pod"
	msgNotHelpful        = "Preemption is not helpful for scheduling"
)

// Plugin is DefaultPreemption.
type Plugin struct {
	fh   framework.Handle
	args configv1.DefaultPreemptionArgs

	// podLister re-reads the preemptor, as kube-scheduler does, when the shared informer
	// has synced; podsSynced says whether it has.
	podLister  corelisters.PodLister
	podsSynced func() bool
}

var (
	_ framework.PostFilterPlugin  = &Plugin{}
	_ framework.EnqueueExtensions = &Plugin{}
)

// New builds the plugin from *configv1.DefaultPreemptionArgs (nil for the defaults).
func New(_ context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args := &configv1.DefaultPreemptionArgs{}
	if obj != nil {
		in, ok := obj.(*configv1.DefaultPreemptionArgs)
		if !ok {
			return nil, fmt.Errorf("got args of type %T, want *DefaultPreemptionArgs", obj)
		}
		args = in.DeepCopy()
	}
	SetDefaultArgs(args)
	if err := ValidateArgs(nil, args); err != nil {
		return nil, err
	}
	pl := &Plugin{fh: h, args: *args}
	if f := h.SharedInformerFactory(); f != nil {
		inf := f.Core().V1().Pods()
		pl.podLister = inf.Lister()
		pl.podsSynced = inf.Informer().HasSynced
	}
	return pl, nil
}

// SetDefaultArgs fills in kube-scheduler's v1 defaults: 10 % of the nodes, at least 100.
func SetDefaultArgs(args *configv1.DefaultPreemptionArgs) {
	if args.MinCandidateNodesPercentage == nil {
		v := int32(10)
		args.MinCandidateNodesPercentage = &v
	}
	if args.MinCandidateNodesAbsolute == nil {
		v := int32(100)
		args.MinCandidateNodesAbsolute = &v
	}
}

// ValidateArgs checks defaulted args as kube-scheduler does.
func ValidateArgs(path *field.Path, args *configv1.DefaultPreemptionArgs) error {
	var errs field.ErrorList
	pctPath, absPath := path.Child("minCandidateNodesPercentage"), path.Child("minCandidateNodesAbsolute")
	pct, abs := *args.MinCandidateNodesPercentage, *args.MinCandidateNodesAbsolute
	if pct < 0 || pct > 100 {
		errs = append(errs, field.Invalid(pctPath, pct, "not in valid range [0, 100]"))
	}
	if abs < 0 {
		errs = append(errs, field.Invalid(absPath, abs, "not in valid range [0, inf)"))
	}
	if pct == 0 && abs == 0 {
		errs = append(errs,
			field.Invalid(pctPath, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"),
			field.Invalid(absPath, abs, "cannot be zero at the same time as minCandidateNodesPercentage"))
	}
	return errs.ToAggregate()
}

// Name returns Name.
func (pl *Plugin) Name() string { return Name }

// EventsToRegister registers nothing: preemption runs synchronously, so this plugin never
// rejects a pod itself (kube-scheduler registers an event only for asynchronous preemption,
// whose PreEnqueue holds the preemptor back while its victims are deleted).
func (pl *Plugin) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return nil, nil
}

// PostFilter preempts for pod. Its message (prefixed "preemption: ") ends up after Filter's in
// the pod's PodScheduled condition.
func (pl *Plugin) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, m framework.NodeToStatusReader) (*framework.PostFilterResult, *framework.Status) {
	result, status := pl.preempt(ctx, state, pod, m)
	if msg := status.Message(); msg != "" {
		return result, framework.NewStatus(status.Code(), "preemption: "+msg)
	}
	return result, status
}

// preempt returns, as kube-scheduler's Evaluator.Preempt:
//   - nil, Error: a transient failure; the nomination is left alone.
//   - nil, Unschedulable: the pod may not preempt (now); the nomination is left alone.
//   - result (nominating ""), Unschedulable: preemption cannot help; the nomination is cleared.
//   - result (nominating the node), Success: victims are on their way out.
func (pl *Plugin) preempt(ctx context.Context, state *framework.CycleState, pod *v1.Pod, m framework.NodeToStatusReader) (*framework.PostFilterResult, *framework.Status) {
	logger := klog.FromContext(ctx)
	pod, err := pl.latestPod(pod)
	if err != nil {
		logger.Error(err, "Could not get the updated preemptor pod object", "pod", klog.KObj(pod))
		return nil, framework.AsStatus(err)
	}

	if ok, msg := pl.PodEligibleToPreemptOthers(pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		logger.V(5).Info("Pod is not eligible for preemption", "pod", klog.KObj(pod), "reason", msg)
		return nil, framework.NewStatus(framework.Unschedulable, msg)
	}

	allNodes, err := pl.fh.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	candidates, nodeStatuses, err := pl.findCandidates(ctx, state, allNodes, pod, m)
	if err != nil && len(candidates) == 0 {
		return nil, framework.AsStatus(err)
	}
	if len(candidates) == 0 {
		logger.V(2).Info("No preemption candidate is found; preemption is not helpful for scheduling", "pod", klog.KObj(pod))
		clear := &framework.PostFilterResult{NominatingInfo: &framework.NominatingInfo{NominatingMode: framework.ModeOverride}}
		return clear, framework.NewStatus(framework.Unschedulable, noCandidateMessage(len(allNodes), nodeStatuses))
	}

	best := pickOneNodeForPreemption(candidates)
	logger.V(2).Info("the target node for the preemption is determined", "node", best.Node, "pod", klog.KObj(pod))
	if status := pl.prepareCandidate(ctx, best, pod); !status.IsSuccess() {
		return nil, status
	}
	result := &framework.PostFilterResult{NominatingInfo: &framework.NominatingInfo{NominatedNodeName: best.Node, NominatingMode: framework.ModeOverride}}
	return result, framework.NewStatus(framework.Success,
		fmt.Sprintf("found a potential placement for pod on node %v, preempting %d victims", best.Node, len(best.Victims)))
}

// latestPod re-reads the preemptor from the informer, so that eligibility sees its latest
// nominatedNodeName. Until that informer has synced (or without one, in tests) the pod the
// scheduler popped is used.
func (pl *Plugin) latestPod(pod *v1.Pod) (*v1.Pod, error) {
	if pl.podLister == nil || !pl.podsSynced() {
		return pod, nil
	}
	latest, err := pl.podLister.Pods(pod.Namespace).Get(pod.Name)
	if err != nil {
		return pod, err
	}
	return latest, nil
}

// PodEligibleToPreemptOthers says whether pod may preempt, and why not:
//   - its preemptionPolicy is Never; or
//   - it already preempted on its nominated node and a lower-priority pod there is still
//     terminating because of it: wait for that rather than preempt more. When Filter found
//     the nominated node UnschedulableAndUnresolvable, waiting cannot help, so it may preempt.
func (pl *Plugin) PodEligibleToPreemptOthers(pod *v1.Pod, nominatedNodeStatus *framework.Status) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, msgPreemptNever
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" || nominatedNodeStatus.Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	nodeInfo, _ := pl.fh.SnapshotSharedLister().NodeInfos().Get(nominated)
	if nodeInfo == nil {
		return true, ""
	}
	priority := corev1helpers.PodPriority(pod)
	for _, pi := range nodeInfo.Pods {
		if corev1helpers.PodPriority(pi.Pod) < priority && terminatingByPreemption(pi.Pod) {
			return false, msgTerminatingOnNode
		}
	}
	return true, ""
}

// terminatingByPreemption reports a pod being deleted because the scheduler preempted it.
func terminatingByPreemption(p *v1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// getOffsetRand picks where in the node list the dry run starts; tests replace it.
var getOffsetRand = rand.Int31n

// offsetAndNumCandidates picks a random starting node, so that repeated preemptions do not
// always evict on the same nodes, and how many candidates the dry run must find.
func (pl *Plugin) offsetAndNumCandidates(numNodes int32) (int32, int32) {
	return getOffsetRand(numNodes), numCandidates(numNodes, *pl.args.MinCandidateNodesPercentage, *pl.args.MinCandidateNodesAbsolute)
}

// numCandidates is max(numNodes*percentage/100, absolute), at most numNodes.
func numCandidates(numNodes, percentage, absolute int32) int32 {
	n := numNodes * percentage / 100
	return min(max(n, absolute), numNodes)
}

// noCandidateMessage says why no node can be made to fit, as kube-scheduler's FitError: a
// histogram of the reasons the dry run found per node, and "Preemption is not helpful for
// scheduling" for every node it did not try.
func noCandidateMessage(numAllNodes int, nodeStatuses map[string]*framework.Status) string {
	counts := map[string]int{}
	for _, s := range nodeStatuses {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	if len(nodeStatuses) < numAllNodes {
		counts[msgNotHelpful] += numAllNodes - len(nodeStatuses)
	}
	reasons := make([]string, 0, len(counts))
	for r, n := range counts {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	msg := fmt.Sprintf("0/%d nodes are available:", numAllNodes)
	if len(reasons) > 0 {
		msg += " " + strings.Join(reasons, ", ") + "."
	}
	return msg
}
