package runtime

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/framework/parallelize"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// RunPreFilterPlugins runs the PreFilter plugins over the snapshot's nodes, at the start of
// findNodesThatFitPod. It also decides whether this cycle's plugin durations are sampled.
//
//   - Skip: the plugin's Filter (and PreFilterExtensions) are skipped this cycle; the names
//     end up in state.SkipFilterPlugins.
//   - UnschedulableAndUnresolvable stops at once (preemption cannot help).
//   - Unschedulable lets the others run (preemption needs their state) and is returned at
//     the end.
//   - Error stops at once.
//
// The results are intersected; when the intersection is empty the pod is
// UnschedulableAndUnresolvable. The returned set names the plugins whose results narrowed
// the nodes: the scheduler gives the nodes they left out an UnschedulableAndUnresolvable
// status and records these plugins as having rejected the pod.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod) (_ *framework.PreFilterResult, status *framework.Status, _ sets.Set[string]) {
	start := time.Now()
	skip := sets.New[string]()
	defer func() {
		state.SkipFilterPlugins = skip
		f.observePoint(metrics.PreFilter, status, start)
	}()
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	f.sampleCycle(state)
	if f.snapshotLister == nil {
		return nil, framework.AsStatus(fmt.Errorf("getting all nodes: no snapshot")), nil
	}
	nodes, err := f.snapshotLister.NodeInfos().List()
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("getting all nodes: %w", err)), nil
	}
	record := f.shouldRecord(state)
	var result *framework.PreFilterResult
	var unschedulable *framework.Status
	narrowing := sets.New[string]()
	for _, pl := range f.preFilterPlugins {
		var r *framework.PreFilterResult
		var s *framework.Status
		current = pl.Name()
		if record {
			t := time.Now()
			r, s = pl.PreFilter(ctx, state, pod, nodes)
			observePlugin(pl.Name(), metrics.PreFilter, s.Code(), t)
		} else {
			r, s = pl.PreFilter(ctx, state, pod, nodes)
		}
		switch {
		case s.IsSkip():
			skip.Insert(pl.Name())
			continue
		case s.Code() == framework.UnschedulableAndUnresolvable:
			return nil, s.WithPlugin(pl.Name()), nil
		case s.Code() == framework.Unschedulable:
			unschedulable = s.WithPlugin(pl.Name())
			continue
		case !s.IsSuccess():
			return nil, framework.AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name()), nil
		}
		if !r.AllNodes() {
			narrowing.Insert(pl.Name())
		}
		result = result.Merge(r)
		if !result.AllNodes() && len(result.NodeNames) == 0 {
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", sets.List(narrowing))
			if len(narrowing) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", sets.List(narrowing)[0])
			}
			return result, framework.NewStatus(framework.UnschedulableAndUnresolvable, msg), narrowing
		}
	}
	return result, unschedulable, narrowing
}

// RunPreFilterExtensionAddPod tells the PreFilter plugins that podInfoToAdd is on nodeInfo
// (a nominated pod, or a victim preemption puts back). It stops at the first failure.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, podInfoToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) (status *framework.Status) {
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	for _, pl := range f.preFilterPlugins {
		current = pl.Name()
		ext := pl.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		var s *framework.Status
		if record {
			t := time.Now()
			s = ext.AddPod(ctx, state, podToSchedule, podInfoToAdd, nodeInfo)
			observePlugin(pl.Name(), metrics.PreFilterExtensionAddPod, s.Code(), t)
		} else {
			s = ext.AddPod(ctx, state, podToSchedule, podInfoToAdd, nodeInfo)
		}
		if !s.IsSuccess() {
			err := s.AsError()
			klog.FromContext(ctx).Error(err, "Plugin failed", "pod", klog.KObj(podToSchedule), "node", klog.KObj(nodeInfo.Node()), "operation", "addPod", "plugin", pl.Name())
			return framework.AsStatus(fmt.Errorf("running AddPod on PreFilter plugin %q: %w", pl.Name(), err))
		}
	}
	return nil
}

// RunPreFilterExtensionRemovePod tells the PreFilter plugins that podInfoToRemove is gone
// from nodeInfo (a preemption victim). It stops at the first failure.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, podInfoToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) (status *framework.Status) {
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	for _, pl := range f.preFilterPlugins {
		current = pl.Name()
		ext := pl.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		var s *framework.Status
		if record {
			t := time.Now()
			s = ext.RemovePod(ctx, state, podToSchedule, podInfoToRemove, nodeInfo)
			observePlugin(pl.Name(), metrics.PreFilterExtensionRemovePod, s.Code(), t)
		} else {
			s = ext.RemovePod(ctx, state, podToSchedule, podInfoToRemove, nodeInfo)
		}
		if !s.IsSuccess() {
			err := s.AsError()
			klog.FromContext(ctx).Error(err, "Plugin failed", "pod", klog.KObj(podToSchedule), "node", klog.KObj(nodeInfo.Node()), "operation", "removePod", "plugin", pl.Name())
			return framework.AsStatus(fmt.Errorf("running RemovePod on PreFilter plugin %q: %w", pl.Name(), err))
		}
	}
	return nil
}

// RunFilterPlugins runs the Filter plugins (but those whose PreFilter said Skip) for one
// node and returns the first rejection, with the plugin's name on it. A status other than a
// rejection is turned into an Error. It is called for many nodes in parallel; the
// Filter extension-point duration is the caller's to record, once per cycle.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (status *framework.Status) {
	// The index of the plugin being called, which a panic is charged to: an int store per
	// call, since this runs for every plugin on every node.
	current := -1
	defer func() {
		if r := recover(); r != nil {
			status = pluginPanicStatus(ctx, pluginName(f.filterPlugins, current), asPanicError(ctx, r))
		}
	}()
	record := f.shouldRecord(state)
	for i, pl := range f.filterPlugins {
		if state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		var s *framework.Status
		current = i
		if record {
			t := time.Now()
			s = pl.Filter(ctx, state, pod, nodeInfo)
			observePlugin(pl.Name(), metrics.Filter, s.Code(), t)
		} else {
			s = pl.Filter(ctx, state, pod, nodeInfo)
		}
		if s.IsSuccess() {
			continue
		}
		if !s.IsRejected() {
			s = framework.AsStatus(fmt.Errorf("running %q filter plugin: %w", pl.Name(), s.AsError()))
		}
		return s.WithPlugin(pl.Name())
	}
	return nil
}

// RunFilterPluginsWithNominatedPods filters one node as if the pods nominated to it with a
// priority at least the pod's were already running there, and then, if some were added and
// the pod fit, again without them. The pod must fit both ways: resources and anti-affinity
// are stricter with the nominated pods, affinity may be stricter without them (they may
// end up elsewhere). Lower-priority nominated pods are ignored: the pod may take the room
// freed for them.
func (f *Framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	added, stateWith, nodeInfoWith, err := f.addNominatedPods(ctx, pod, state, nodeInfo)
	if err != nil {
		return framework.AsStatus(err)
	}
	if added {
		if s := f.RunFilterPlugins(ctx, stateWith, pod, nodeInfoWith); !s.IsSuccess() {
			return s
		}
	}
	return f.RunFilterPlugins(ctx, state, pod, nodeInfo)
}

// addNominatedPods returns copies of state and nodeInfo with the pods nominated to the node
// whose priority is at least pod's, and whether there were any.
func (f *Framework) addNominatedPods(ctx context.Context, pod *v1.Pod, state *framework.CycleState, nodeInfo *framework.NodeInfo) (bool, *framework.CycleState, *framework.NodeInfo, error) {
	if f.nominator == nil || nodeInfo.Node() == nil {
		return false, state, nodeInfo, nil
	}
	nominated := f.nominator.NominatedPodsForNode(nodeInfo.Node().Name)
	if len(nominated) == 0 {
		return false, state, nodeInfo, nil
	}
	priority := corev1helpers.PodPriority(pod)
	var stateOut *framework.CycleState
	var nodeInfoOut *framework.NodeInfo
	for _, pi := range nominated {
		if pi.Pod.UID == pod.UID || corev1helpers.PodPriority(pi.Pod) < priority {
			continue
		}
		if nodeInfoOut == nil {
			stateOut, nodeInfoOut = state.Clone(), nodeInfo.Snapshot()
		}
		nodeInfoOut.AddPod(pi)
		if s := f.RunPreFilterExtensionAddPod(ctx, stateOut, pod, pi, nodeInfoOut); !s.IsSuccess() {
			return false, state, nodeInfo, s.AsError()
		}
	}
	if nodeInfoOut == nil {
		return false, state, nodeInfo, nil
	}
	return true, stateOut, nodeInfoOut, nil
}

// RunPostFilterPlugins runs the PostFilter plugins (preemption) when no node fits. It stops at
// the first that succeeds or says UnschedulableAndUnresolvable; an Error stops it too.
// Otherwise the pod stays Unschedulable with every plugin's reasons, attributed to the first
// plugin, and the last nominating result (if any) is returned.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, filteredNodeStatusMap framework.NodeToStatusReader) (_ *framework.PostFilterResult, status *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(metrics.PostFilter, status, start) }()
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	var result *framework.PostFilterResult
	var reasons []string
	var rejector string
	for _, pl := range f.postFilterPlugins {
		var r *framework.PostFilterResult
		var s *framework.Status
		current = pl.Name()
		if record {
			t := time.Now()
			r, s = pl.PostFilter(ctx, state, pod, filteredNodeStatusMap)
			observePlugin(pl.Name(), metrics.PostFilter, s.Code(), t)
		} else {
			r, s = pl.PostFilter(ctx, state, pod, filteredNodeStatusMap)
		}
		switch {
		case s.IsSuccess():
			return r, s
		case s.Code() == framework.UnschedulableAndUnresolvable:
			return r, s.WithPlugin(pl.Name())
		case !s.IsRejected():
			return nil, framework.AsStatus(s.AsError()).WithPlugin(pl.Name())
		}
		if r != nil && r.Mode() != framework.ModeNoop {
			result = r
		}
		reasons = append(reasons, s.Reasons()...)
		if rejector == "" {
			rejector = pl.Name()
		}
	}
	return result, framework.NewStatus(framework.Unschedulable, reasons...).WithPlugin(rejector)
}

// RunPreScorePlugins runs the PreScore plugins over the feasible nodes. Skip skips the
// plugin's Score this cycle (state.SkipScorePlugins); anything but Success or Skip is an
// Error.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (status *framework.Status) {
	start := time.Now()
	skip := sets.New[string]()
	defer func() {
		state.SkipScorePlugins = skip
		f.observePoint(metrics.PreScore, status, start)
	}()
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	for _, pl := range f.preScorePlugins {
		var s *framework.Status
		current = pl.Name()
		if record {
			t := time.Now()
			s = pl.PreScore(ctx, state, pod, nodes)
			observePlugin(pl.Name(), metrics.PreScore, s.Code(), t)
		} else {
			s = pl.PreScore(ctx, state, pod, nodes)
		}
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("running PreScore plugin %q: %w", pl.Name(), s.AsError()))
		}
	}
	return nil
}

// RunScorePlugins scores the feasible nodes (prioritizeNodes): every Score plugin not skipped
// scores every node, the nodes in parallel; each plugin's NormalizeScore then scales its
// scores (the plugins in parallel); a score outside [MinNodeScore, MaxNodeScore] after that
// is an Error; finally each score is multiplied by the plugin's weight and summed per node.
// The result has one entry per node, in the order of nodes.
func (f *Framework) RunScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (_ []framework.NodePluginScores, status *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(metrics.Score, status, start) }()
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, "", err) })
	plugins := f.nonSkippedScorePlugins(state)
	out := make([]framework.NodePluginScores, len(nodes))
	if len(plugins) == 0 {
		for i, n := range nodes {
			out[i] = framework.NodePluginScores{Name: n.Node().Name, Scores: []framework.PluginScore{}}
		}
		return out, nil
	}
	record := f.shouldRecord(state)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errCh := parallelize.NewResultChannel[error]()

	// scores[p] is plugin p's score per node, the shape NormalizeScore takes.
	scores := make([]framework.NodeScoreList, len(plugins))
	for p := range plugins {
		scores[p] = make(framework.NodeScoreList, len(nodes))
	}
	f.parallelizer.Until(ctx, len(nodes), func(i int) {
		current := -1 // as in RunFilterPlugins
		defer func() {
			if r := recover(); r != nil {
				errCh.SendWithCancel(pluginPanicStatus(ctx, pluginName(plugins, current), asPanicError(ctx, r)).AsError(), cancel)
			}
		}()
		nodeInfo := nodes[i]
		name := nodeInfo.Node().Name
		for p, pl := range plugins {
			var score int64
			var s *framework.Status
			current = p
			if record {
				t := time.Now()
				score, s = pl.Score(ctx, state, pod, nodeInfo)
				observePlugin(pl.Name(), metrics.Score, s.Code(), t)
			} else {
				score, s = pl.Score(ctx, state, pod, nodeInfo)
			}
			if !s.IsSuccess() {
				errCh.SendWithCancel(fmt.Errorf("plugin %q failed with: %w", pl.Name(), s.AsError()), cancel)
				return
			}
			scores[p][i] = framework.NodeScore{Name: name, Score: score}
		}
	}, metrics.Score)
	if err := errCh.Receive(); err != nil {
		return nil, framework.AsStatus(fmt.Errorf("running Score plugins: %w", err))
	}
	if err := parent.Err(); err != nil {
		return nil, framework.AsStatus(fmt.Errorf("running Score plugins: %w", err))
	}

	f.parallelizer.Until(ctx, len(plugins), func(p int) {
		pl := plugins[p]
		s := callPlugin(ctx, pl.Name(), func() *framework.Status {
			ext := pl.ScoreExtensions()
			if ext == nil {
				return nil
			}
			if !record {
				return ext.NormalizeScore(ctx, state, pod, scores[p])
			}
			t := time.Now()
			s := ext.NormalizeScore(ctx, state, pod, scores[p])
			observePlugin(pl.Name(), metrics.ScoreExtensionNormalize, s.Code(), t)
			return s
		})
		if !s.IsSuccess() {
			errCh.SendWithCancel(fmt.Errorf("plugin %q failed with: %w", pl.Name(), s.AsError()), cancel)
		}
	}, metrics.Score)
	if err := errCh.Receive(); err != nil {
		return nil, framework.AsStatus(fmt.Errorf("running Normalize on Score plugins: %w", err))
	}
	if err := parent.Err(); err != nil {
		return nil, framework.AsStatus(fmt.Errorf("running Normalize on Score plugins: %w", err))
	}

	// One backing array for every node's per-plugin scores: one allocation, not one per node.
	weighted := make([]framework.PluginScore, len(nodes)*len(plugins))
	f.parallelizer.Until(ctx, len(nodes), func(i int) {
		mine := weighted[i*len(plugins) : (i+1)*len(plugins) : (i+1)*len(plugins)]
		var total int64
		for p, pl := range plugins {
			score := scores[p][i].Score
			if score > framework.MaxNodeScore || score < framework.MinNodeScore {
				errCh.SendWithCancel(fmt.Errorf("plugin %q returns an invalid score %v, it should in the range of [%v, %v] after normalizing",
					pl.Name(), score, framework.MinNodeScore, framework.MaxNodeScore), cancel)
				return
			}
			mine[p] = framework.PluginScore{Name: pl.Name(), Score: score * pl.weight}
			total += score * pl.weight
		}
		out[i] = framework.NodePluginScores{Name: nodes[i].Node().Name, Scores: mine, TotalScore: total}
	}, metrics.Score)
	if err := errCh.Receive(); err != nil {
		return nil, framework.AsStatus(fmt.Errorf("applying score defaultWeights on Score plugins: %w", err))
	}
	if err := parent.Err(); err != nil {
		return nil, framework.AsStatus(fmt.Errorf("applying score defaultWeights on Score plugins: %w", err))
	}
	return out, nil
}

// nonSkippedScorePlugins are the Score plugins whose PreScore did not say Skip.
func (f *Framework) nonSkippedScorePlugins(state *framework.CycleState) []weightedScorePlugin {
	if len(state.SkipScorePlugins) == 0 {
		return f.scorePlugins
	}
	out := make([]weightedScorePlugin, 0, len(f.scorePlugins))
	for _, pl := range f.scorePlugins {
		if !state.SkipScorePlugins.Has(pl.Name()) {
			out = append(out, pl)
		}
	}
	return out
}
