package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	frameworkruntime "github.com/berth-cluster/berth/pkg/scheduler/framework/runtime"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// ScheduleResult is where the scheduling cycle put a pod.
type ScheduleResult struct {
	SuggestedHost  string
	EvaluatedNodes int
	FeasibleNodes  int
	// nominatingInfo is what PostFilter (preemption) decided, when the pod fits nowhere.
	nominatingInfo *framework.NominatingInfo
}

// scheduleOne does the whole work for one pod, as seed 003's scheduleOne: NextPod, the
// scheduling cycle, then the binding cycle in its own goroutine, so that the next pod's cycle
// need not wait for this one's API calls.
//
// A panic while handling the pod ends only this pod's attempt: the scheduling and binding
// cycles turn one into an Error status (handleSchedulingFailure: a FailedScheduling event,
// PodScheduled=False with reason SchedulerError, back-off); one anywhere else in scheduleOne
// is recovered here, at its boundary, and handled the same way.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	logger := klog.FromContext(ctx)
	podInfo, err := s.Queue.Pop(logger)
	if err != nil || podInfo == nil || podInfo.Pod == nil {
		return
	}
	pod := podInfo.Pod
	start := s.clock.Now()
	var fwk *frameworkruntime.Framework
	defer panics.Recover(ctx, framework.PanicComponent, func(err error) { s.handlePanic(ctx, fwk, podInfo, err, start) })
	fwk, err = s.frameworkForPod(pod)
	if err != nil {
		logger.Error(err, "Dropping a pod no profile schedules", "pod", klog.KObj(pod))
		s.Queue.Done(pod.UID)
		return
	}
	if s.skipPodSchedule(logger, pod) {
		s.Queue.Done(pod.UID)
		return
	}
	logger.V(3).Info("Attempting to schedule pod", "pod", klog.KObj(pod))

	state := framework.NewCycleState()
	cycleCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	result, assumedPodInfo, status := s.schedulingCycle(cycleCtx, state, fwk, podInfo, start)
	if !status.IsSuccess() {
		s.handleSchedulingFailure(ctx, fwk, podInfo, status, result.nominatingInfo, start)
		return
	}
	go func() {
		defer panics.Recover(ctx, framework.PanicComponent, func(err error) { s.handlePanic(ctx, fwk, assumedPodInfo, err, start) })
		bindingCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		status := s.bindingCycle(bindingCtx, state, fwk, result, assumedPodInfo, start)
		if !status.IsSuccess() {
			s.handleBindingCycleError(bindingCtx, state, fwk, assumedPodInfo, start, result, status)
		}
	}()
}

// handlePanic is the last resort of scheduleOne and of the binding goroutine, for a panic
// outside the cycles (which handle their own): the pod, if still assumed, is forgotten, and
// it is handled as a scheduling error. If that panics too, the pod is only marked done: its
// next update, or the queue's periodic flush, brings it back.
func (s *Scheduler) handlePanic(ctx context.Context, fwk *frameworkruntime.Framework, podInfo *framework.QueuedPodInfo, err error, start time.Time) {
	logger := klog.FromContext(ctx)
	pod := podInfo.Pod
	if fwk == nil {
		s.Queue.Done(pod.UID)
		return
	}
	herr := panics.Call(ctx, framework.PanicComponent, func() error {
		if assumed, _ := s.Cache.IsAssumedPod(pod); assumed {
			if cached, err := s.Cache.GetPod(pod); err == nil {
				s.forget(logger, cached)
			}
		}
		s.handleSchedulingFailure(ctx, fwk, podInfo, framework.AsStatus(err), clearNomination, start)
		return nil
	})
	if herr != nil {
		logger.Error(herr, "Handling a scheduling panic failed; the pod waits for its next event", "pod", klog.KObj(pod))
		s.Queue.Done(pod.UID)
	}
}

// skipPodSchedule skips a pod that is being deleted, or whose earlier version is still
// assumed (an update arrived while it was binding).
func (s *Scheduler) skipPodSchedule(logger klog.Logger, pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		logger.V(3).Info("Skipping a pod that is being deleted", "pod", klog.KObj(pod))
		return true
	}
	if assumed, _ := s.Cache.IsAssumedPod(pod); assumed {
		logger.V(3).Info("Skipping a pod already assumed", "pod", klog.KObj(pod))
		return true
	}
	return false
}

// schedulingCycle finds a node (SchedulePod, or PostFilter when none fits), assumes the pod
// there, and runs Reserve and Permit.
func (s *Scheduler) schedulingCycle(ctx context.Context, state *framework.CycleState, fwk *frameworkruntime.Framework,
	podInfo *framework.QueuedPodInfo, start time.Time) (result ScheduleResult, _ *framework.QueuedPodInfo, status *framework.Status) {
	logger := klog.FromContext(ctx)
	pod := podInfo.Pod
	// A panic in the cycle (the plugins' own are Error statuses already) fails it with an
	// Error status; an assumption made is undone.
	var assumed *v1.Pod
	defer panics.Recover(ctx, framework.PanicComponent, func(err error) {
		if assumed != nil {
			fwk.RunReservePluginsUnreserve(ctx, state, assumed, assumed.Spec.NodeName)
			s.forget(logger, assumed)
		}
		result, status = ScheduleResult{nominatingInfo: clearNomination}, framework.AsStatus(err)
	})
	result, err := s.SchedulePod(ctx, fwk, state, pod)
	if err != nil {
		if errors.Is(err, ErrNoNodesAvailable) {
			return ScheduleResult{nominatingInfo: clearNomination}, podInfo,
				framework.NewStatus(framework.UnschedulableAndUnresolvable).WithError(err)
		}
		var fitErr *FitError
		if !errors.As(err, &fitErr) {
			return ScheduleResult{nominatingInfo: clearNomination}, podInfo, framework.AsStatus(err)
		}
		// No node fits: PostFilter (preemption) may make room on one.
		if !fwk.HasPostFilterPlugins() {
			return ScheduleResult{}, podInfo, framework.NewStatus(framework.Unschedulable).WithError(err)
		}
		postResult, status := fwk.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
		msg := status.Message()
		fitErr.Diagnosis.PostFilterMsg = msg
		if status.Code() == framework.Error {
			logger.Error(status.AsError(), "Status after running PostFilter plugins", "pod", klog.KObj(pod))
		} else {
			logger.V(5).Info("Status after running PostFilter plugins", "pod", klog.KObj(pod), "status", msg)
		}
		var nominating *framework.NominatingInfo
		if postResult != nil {
			nominating = postResult.NominatingInfo
		}
		return ScheduleResult{nominatingInfo: nominating}, podInfo, framework.NewStatus(framework.Unschedulable).WithError(err)
	}

	// assume: the cache counts the pod on its node now, so the next cycle sees the node as
	// fuller without waiting for the binding.
	assumedPodInfo := podInfo.DeepCopy()
	assumedPod := assumedPodInfo.Pod.DeepCopy()
	assumedPodInfo.PodInfo = framework.NewPodInfo(assumedPod)
	if err := s.assume(logger, assumedPod, result.SuggestedHost); err != nil {
		return ScheduleResult{nominatingInfo: clearNomination}, assumedPodInfo, framework.AsStatus(err)
	}
	assumed = assumedPod
	if status := fwk.RunReservePluginsReserve(ctx, state, assumedPod, result.SuggestedHost); !status.IsSuccess() {
		fwk.RunReservePluginsUnreserve(ctx, state, assumedPod, result.SuggestedHost)
		s.forget(logger, assumedPod)
		return ScheduleResult{nominatingInfo: clearNomination}, assumedPodInfo, status
	}
	status = fwk.RunPermitPlugins(ctx, state, assumedPod, result.SuggestedHost)
	if !status.IsWait() && !status.IsSuccess() {
		fwk.RunReservePluginsUnreserve(ctx, state, assumedPod, result.SuggestedHost)
		s.forget(logger, assumedPod)
		return ScheduleResult{nominatingInfo: clearNomination}, assumedPodInfo, status
	}
	return result, assumedPodInfo, nil
}

// clearNomination removes a nomination the pod no longer deserves.
var clearNomination = &framework.NominatingInfo{NominatingMode: framework.ModeOverride}

// bindingCycle waits for Permit, then PreBind, bind, PostBind, as seed 003's goroutine.
func (s *Scheduler) bindingCycle(ctx context.Context, state *framework.CycleState, fwk *frameworkruntime.Framework,
	result ScheduleResult, assumedPodInfo *framework.QueuedPodInfo, start time.Time) (status *framework.Status) {
	logger := klog.FromContext(ctx)
	assumedPod := assumedPodInfo.Pod
	// A panic before the binding fails the cycle with an Error status (the caller undoes the
	// assumption and requeues); one after it only ends the bookkeeping of a bound pod.
	bound := false
	defer panics.Recover(ctx, framework.PanicComponent, func(err error) {
		if bound {
			logger.Error(err, "Finishing the binding cycle of a bound pod", "pod", klog.KObj(assumedPod))
			s.Queue.Done(assumedPod.UID)
			return
		}
		status = framework.AsStatus(err)
	})
	if status := fwk.WaitOnPermit(ctx, assumedPod); !status.IsSuccess() {
		return status
	}
	if status := fwk.RunPreBindPlugins(ctx, state, assumedPod, result.SuggestedHost); !status.IsSuccess() {
		return status
	}
	if status := s.bind(ctx, fwk, state, assumedPod, result.SuggestedHost); !status.IsSuccess() {
		return status
	}
	bound = true
	if err := s.Cache.FinishBinding(logger, assumedPod); err != nil {
		logger.Error(err, "Finishing the binding in the cache", "pod", klog.KObj(assumedPod))
	}
	logger.V(2).Info("Successfully bound pod to node", "pod", klog.KObj(assumedPod), "node", result.SuggestedHost,
		"evaluatedNodes", result.EvaluatedNodes, "feasibleNodes", result.FeasibleNodes)
	metrics.PodScheduled(fwk.ProfileName(), metrics.SinceInSeconds(start))
	metrics.PodSchedulingAttempts.Observe(float64(assumedPodInfo.Attempts))
	if assumedPodInfo.InitialAttemptTimestamp != nil {
		metrics.PodSchedulingSLIDuration.WithLabelValues(metrics.AttemptsLabel(assumedPodInfo.Attempts)).
			Observe(metrics.SinceInSeconds(*assumedPodInfo.InitialAttemptTimestamp))
	}
	fwk.EventRecorder().Eventf(assumedPod, nil, v1.EventTypeNormal, "Scheduled", "Binding",
		"Successfully assigned %v/%v to %v", assumedPod.Namespace, assumedPod.Name, result.SuggestedHost)
	fwk.RunPostBindPlugins(ctx, state, assumedPod, result.SuggestedHost)
	s.Queue.Done(assumedPod.UID)
	return nil
}

// handleBindingCycleError undoes the assumption and sends the pod back to the queue.
func (s *Scheduler) handleBindingCycleError(ctx context.Context, state *framework.CycleState, fwk *frameworkruntime.Framework,
	podInfo *framework.QueuedPodInfo, start time.Time, result ScheduleResult, status *framework.Status) {
	logger := klog.FromContext(ctx)
	pod := podInfo.Pod
	fwk.RunReservePluginsUnreserve(ctx, state, pod, result.SuggestedHost)
	s.forget(logger, pod)
	// The node this pod was assumed on has room again: pods waiting for room may fit.
	s.Queue.MoveAllToActiveOrBackoffQueue(logger, framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete, Label: "AssignedPodDelete"}, pod, nil, nil)
	s.handleSchedulingFailure(ctx, fwk, podInfo, status, clearNomination, start)
}

// assume tells the cache the pod runs on host, before it is bound.
func (s *Scheduler) assume(logger klog.Logger, pod *v1.Pod, host string) error {
	pod.Spec.NodeName = host
	if err := s.Cache.AssumePod(logger, pod); err != nil {
		return fmt.Errorf("assuming pod %s/%s on %s: %w", pod.Namespace, pod.Name, host, err)
	}
	// A nominated pod that is now assumed no longer needs the nomination's room.
	s.Queue.DeleteNominatedPodIfExists(pod)
	return nil
}

func (s *Scheduler) forget(logger klog.Logger, pod *v1.Pod) {
	if err := s.Cache.ForgetPod(logger, pod); err != nil {
		logger.Error(err, "Forgetting an assumed pod", "pod", klog.KObj(pod))
	}
}

// bind binds through an interested binding extender, else the Bind plugins.
func (s *Scheduler) bind(ctx context.Context, fwk *frameworkruntime.Framework, state *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	start := time.Now()
	defer func() {
		metrics.FrameworkExtensionPointDuration.WithLabelValues(metrics.Binding, "Success", fwk.ProfileName()).Observe(metrics.SinceInSeconds(start))
	}()
	for _, e := range s.Extenders {
		if e.IsBinder() && e.IsInterested(pod) {
			return framework.AsStatus(e.Bind(ctx, pod, node))
		}
	}
	return fwk.RunBindPlugins(ctx, state, pod, node)
}

// SchedulePod is seed 003's Schedule: findNodesThatFitPod, then prioritizeNodes and
// selectHost among the feasible nodes.
func (s *Scheduler) SchedulePod(ctx context.Context, fwk *frameworkruntime.Framework, state *framework.CycleState, pod *v1.Pod) (ScheduleResult, error) {
	logger := klog.FromContext(ctx)
	if err := s.Cache.UpdateSnapshot(logger, s.snapshot); err != nil {
		return ScheduleResult{}, err
	}
	if s.snapshot.NumNodes() == 0 {
		return ScheduleResult{}, ErrNoNodesAvailable
	}
	algoStart := time.Now()
	defer func() { metrics.SchedulingAlgorithmLatency.Observe(metrics.SinceInSeconds(algoStart)) }()

	feasible, diagnosis, err := s.findNodesThatFitPod(ctx, fwk, state, pod)
	if err != nil {
		return ScheduleResult{}, err
	}
	if len(feasible) == 0 {
		return ScheduleResult{}, &FitError{Pod: pod, NumAllNodes: s.snapshot.NumNodes(), Diagnosis: diagnosis}
	}
	evaluated := len(feasible) + diagnosis.NodeToStatus.Len()
	if len(feasible) == 1 {
		return ScheduleResult{SuggestedHost: feasible[0].Node().Name, EvaluatedNodes: evaluated, FeasibleNodes: 1}, nil
	}
	scores, err := s.prioritizeNodes(ctx, fwk, state, pod, feasible)
	if err != nil {
		return ScheduleResult{}, err
	}
	host, err := selectHost(scores)
	return ScheduleResult{SuggestedHost: host, EvaluatedNodes: evaluated, FeasibleNodes: len(feasible)}, err
}

// findNodesThatFitPod runs PreFilter once, then Filter over the nodes in parallel until
// enough feasible ones are found, then the filtering extenders.
func (s *Scheduler) findNodesThatFitPod(ctx context.Context, fwk *frameworkruntime.Framework, state *framework.CycleState, pod *v1.Pod) ([]*framework.NodeInfo, Diagnosis, error) {
	nodeToStatus := frameworkruntime.NewDefaultNodeToStatus()
	diagnosis := Diagnosis{NodeToStatus: nodeToStatus, UnschedulablePlugins: sets.New[string]()}
	allNodes, err := s.snapshot.NodeInfos().List()
	if err != nil {
		return nil, diagnosis, err
	}
	preRes, status, narrowedBy := fwk.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return nil, diagnosis, status.AsError()
		}
		nodeToStatus.SetAbsentNodesStatus(status)
		diagnosis.PreFilterMsg = status.Message()
		if status.Plugin() != "" {
			diagnosis.UnschedulablePlugins.Insert(status.Plugin())
		}
		return nil, diagnosis, nil
	}

	// A pod that preemption nominated to a node tries that node first: the room was made
	// for it.
	if nominated := pod.Status.NominatedNodeName; nominated != "" {
		if ni, err := s.snapshot.Get(nominated); err == nil {
			feasible, err := s.findNodesThatPassFilters(ctx, fwk, state, pod, &diagnosis, []*framework.NodeInfo{ni})
			if err != nil {
				return nil, diagnosis, err
			}
			if feasible, err = s.findNodesThatPassExtenders(ctx, pod, feasible, &diagnosis); err == nil && len(feasible) > 0 {
				return feasible, diagnosis, nil
			}
		}
	}

	nodes := allNodes
	if !preRes.AllNodes() {
		nodes = make([]*framework.NodeInfo, 0, preRes.NodeNames.Len())
		for _, n := range allNodes {
			if preRes.NodeNames.Has(n.Node().Name) {
				nodes = append(nodes, n)
			}
		}
		nodeToStatus.SetAbsentNodesStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable,
			"node(s) didn't satisfy plugin(s) "+fmt.Sprint(sets.List(narrowedBy))))
		diagnosis.UnschedulablePlugins.Insert(narrowedBy.UnsortedList()...)
	}
	feasible, err := s.findNodesThatPassFilters(ctx, fwk, state, pod, &diagnosis, nodes)
	if err != nil {
		return nil, diagnosis, err
	}
	feasible, err = s.findNodesThatPassExtenders(ctx, pod, feasible, &diagnosis)
	return feasible, diagnosis, err
}

// findNodesThatPassFilters filters nodes in parallel, starting where the last cycle stopped,
// and stops once numFeasibleNodesToFind nodes fit.
func (s *Scheduler) findNodesThatPassFilters(ctx context.Context, fwk *frameworkruntime.Framework, state *framework.CycleState, pod *v1.Pod,
	diagnosis *Diagnosis, nodes []*framework.NodeInfo) ([]*framework.NodeInfo, error) {
	numAll := len(nodes)
	if numAll == 0 {
		return nil, nil
	}
	percentage := s.percentageOfNodesToScore
	if p := fwk.PercentageOfNodesToScore(); p != nil {
		percentage = *p
	}
	numToFind := int(numFeasibleNodesToFind(percentage, int32(numAll)))
	if len(s.Extenders) > 0 {
		// Extenders filter too; give them the whole set, as kube-scheduler does.
		numToFind = numAll
	}
	feasible := make([]*framework.NodeInfo, numToFind)
	if !fwk.HasFilterPlugins() {
		for i := range feasible {
			feasible[i] = nodes[(s.nextStartNodeIndex+i)%numAll]
		}
		s.nextStartNodeIndex = (s.nextStartNodeIndex + numToFind) % numAll
		return feasible, nil
	}

	start := time.Now()
	filterCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var found, processed atomic.Int32
	statuses := make([]*framework.Status, numAll)
	var firstErr atomic.Pointer[error]
	check := func(i int) {
		ni := nodes[(s.nextStartNodeIndex+i)%numAll]
		status := fwk.RunFilterPluginsWithNominatedPods(filterCtx, state, pod, ni)
		processed.Add(1)
		switch {
		case status.IsSuccess():
			n := found.Add(1)
			if int(n) > numToFind {
				found.Add(-1)
				cancel()
				return
			}
			feasible[n-1] = ni
		case status.Code() == framework.Error:
			err := status.AsError()
			firstErr.CompareAndSwap(nil, &err)
			cancel()
		default:
			statuses[(s.nextStartNodeIndex+i)%numAll] = status
		}
	}
	fwk.Parallelizer().Until(filterCtx, numAll, check, metrics.Filter)
	metrics.FrameworkExtensionPointDuration.WithLabelValues(metrics.Filter, "Success", fwk.ProfileName()).Observe(metrics.SinceInSeconds(start))
	if e := firstErr.Load(); e != nil {
		return nil, *e
	}
	// Start the next cycle after the last node this one looked at.
	s.nextStartNodeIndex = (s.nextStartNodeIndex + int(processed.Load())) % numAll
	nts := diagnosis.NodeToStatus.(*frameworkruntime.NodeToStatus)
	for i, st := range statuses {
		if st == nil {
			continue
		}
		nts.Set(nodes[i].Node().Name, st)
		if st.Plugin() != "" {
			if st.Code() == framework.Pending {
				if diagnosis.PendingPlugins == nil {
					diagnosis.PendingPlugins = sets.New[string]()
				}
				diagnosis.PendingPlugins.Insert(st.Plugin())
			} else {
				diagnosis.UnschedulablePlugins.Insert(st.Plugin())
			}
		}
	}
	return feasible[:found.Load()], nil
}

// findNodesThatPassExtenders lets each interested filtering extender narrow the nodes.
func (s *Scheduler) findNodesThatPassExtenders(ctx context.Context, pod *v1.Pod, feasible []*framework.NodeInfo, diagnosis *Diagnosis) ([]*framework.NodeInfo, error) {
	nts := diagnosis.NodeToStatus.(*frameworkruntime.NodeToStatus)
	for _, e := range s.Extenders {
		if len(feasible) == 0 {
			break
		}
		if !e.IsFilter() || !e.IsInterested(pod) {
			continue
		}
		fit, failed, unresolvable, err := e.Filter(ctx, pod, feasible)
		if err != nil {
			if e.IsIgnorable() {
				klog.FromContext(ctx).Info("Skipping an ignorable extender that failed", "extender", e.Name(), "err", err)
				continue
			}
			return nil, err
		}
		for node, reason := range unresolvable {
			nts.Set(node, framework.NewStatus(framework.UnschedulableAndUnresolvable, reason).WithPlugin(e.Name()))
		}
		for node, reason := range failed {
			if _, already := unresolvable[node]; !already {
				nts.Set(node, framework.NewStatus(framework.Unschedulable, reason).WithPlugin(e.Name()))
			}
		}
		feasible = fit
	}
	return feasible, nil
}

// prioritizeNodes is seed 003's prioritizeNodes: PreScore, Score (normalized, weighted) and
// the prioritizing extenders' scores, scaled from their 0..10 to the plugins' 0..100.
func (s *Scheduler) prioritizeNodes(ctx context.Context, fwk *frameworkruntime.Framework, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) ([]framework.NodePluginScores, error) {
	if !fwk.HasScorePlugins() && len(s.Extenders) == 0 {
		out := make([]framework.NodePluginScores, len(nodes))
		for i, n := range nodes {
			out[i] = framework.NodePluginScores{Name: n.Node().Name, TotalScore: 1}
		}
		return out, nil
	}
	if status := fwk.RunPreScorePlugins(ctx, state, pod, nodes); !status.IsSuccess() {
		return nil, status.AsError()
	}
	scores, status := fwk.RunScorePlugins(ctx, state, pod, nodes)
	if !status.IsSuccess() {
		return nil, status.AsError()
	}
	if len(s.Extenders) == 0 {
		return scores, nil
	}
	index := make(map[string]int, len(scores))
	for i := range scores {
		index[scores[i].Name] = i
	}
	for _, e := range s.Extenders {
		if !e.IsPrioritizer() || !e.IsInterested(pod) {
			continue
		}
		list, err := e.Prioritize(ctx, pod, nodes)
		if err != nil {
			// A failing prioritizer only loses its say, as in kube-scheduler.
			klog.FromContext(ctx).V(5).Info("Failed to run extender's priority function", "extender", e.Name(), "err", err)
			continue
		}
		for _, hp := range list {
			i, ok := index[hp.Host]
			if !ok {
				continue
			}
			score := hp.Score * e.Weight() * (framework.MaxNodeScore / extenderv1.MaxExtenderPriority)
			scores[i].Scores = append(scores[i].Scores, framework.PluginScore{Name: e.Name(), Score: score})
			scores[i].TotalScore += score
		}
	}
	return scores, nil
}
