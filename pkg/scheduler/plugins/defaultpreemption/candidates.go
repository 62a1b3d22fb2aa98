package defaultpreemption

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Candidate is a node where the preemptor fits once Victims are gone.
type Candidate struct {
	Node string
	// Victims are ordered from the most to the least important.
	Victims []*v1.Pod
	// NumPDBViolations is how many victims a PodDisruptionBudget protects; always 0 in berth.
	NumPDBViolations int64
}

// findCandidates dry-runs preemption on the nodes where Filter's verdict was Unschedulable
// (UnschedulableAndUnresolvable nodes cannot be helped by removing pods). It returns the
// candidates and, for nodes tried in vain, why.
func (pl *Plugin) findCandidates(ctx context.Context, state *framework.CycleState, allNodes []*framework.NodeInfo, pod *v1.Pod, m framework.NodeToStatusReader) ([]*Candidate, map[string]*framework.Status, error) {
	if len(allNodes) == 0 {
		return nil, nil, errors.New("no nodes available")
	}
	potential, err := m.NodesForStatusCode(pl.fh.SnapshotSharedLister().NodeInfos(), framework.Unschedulable)
	if err != nil {
		return nil, nil, err
	}
	if len(potential) == 0 {
		klog.FromContext(ctx).V(3).Info("Preemption will not help schedule pod on any node", "pod", klog.KObj(pod))
		return nil, nil, nil
	}
	offset, num := pl.offsetAndNumCandidates(int32(len(potential)))
	return pl.dryRunPreemption(ctx, state, pod, potential, offset, num)
}

// dryRunPreemption runs SelectVictimsOnNode over potential nodes in parallel, starting at
// offset and wrapping around, and stops once it has num candidates.
func (pl *Plugin) dryRunPreemption(ctx context.Context, state *framework.CycleState, pod *v1.Pod, potential []*framework.NodeInfo, offset, num int32) ([]*Candidate, map[string]*framework.Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu         sync.Mutex
		candidates = make([]*Candidate, 0, num)
		statuses   = map[string]*framework.Status{}
		errs       []error
	)
	checkNode := func(i int) {
		nodeInfo := potential[(int(offset)+i)%len(potential)]
		name := nodeInfo.Node().Name
		// Each node works on its own copies: the victims are removed from them.
		victims, status := pl.SelectVictimsOnNode(ctx, state.Clone(), pod, nodeInfo.Clone())
		if status.IsSuccess() && len(victims) == 0 {
			status = framework.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", name))
		}
		mu.Lock()
		defer mu.Unlock()
		if status.IsSuccess() {
			// Nodes already running when enough were found still finish; their
			// candidates are dropped.
			if len(candidates) < int(num) {
				candidates = append(candidates, &Candidate{Node: name, Victims: victims})
			}
			if len(candidates) >= int(num) {
				cancel()
			}
			return
		}
		if status.Code() == framework.Error {
			errs = append(errs, status.AsError())
		}
		statuses[name] = status
	}
	pl.fh.Parallelizer().Until(ctx, len(potential), checkNode, Name)
	mu.Lock()
	defer mu.Unlock()
	return candidates, statuses, utilerrors.NewAggregate(errs)
}

// SelectVictimsOnNode finds the fewest, least important lower-priority pods whose removal
// lets pod fit on nodeInfo. state and nodeInfo are the caller's copies and are changed.
//
// Every lower-priority pod is removed first; if the pod still does not fit, the node cannot
// help (affinity of the preemptor to its victims is not considered, as in kube-scheduler).
// Then the victims are given back one by one, the most important first, and stay if the pod
// still fits.
func (pl *Plugin) SelectVictimsOnNode(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) ([]*v1.Pod, *framework.Status) {
	runner := pl.fh.PluginsRunner()
	priority := corev1helpers.PodPriority(pod)
	var potential []*framework.PodInfo
	for _, pi := range nodeInfo.Pods {
		if corev1helpers.PodPriority(pi.Pod) < priority {
			potential = append(potential, pi)
		}
	}
	if len(potential) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}

	remove := func(pi *framework.PodInfo) error {
		if err := nodeInfo.RemovePod(pi.Pod); err != nil {
			return err
		}
		return runner.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo).AsError()
	}
	for _, pi := range potential {
		if err := remove(pi); err != nil {
			return nil, framework.AsStatus(err)
		}
	}
	if status := runner.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo); !status.IsSuccess() {
		return nil, status
	}

	sortByImportance(potential)
	// kube-scheduler reprieves first the victims a PodDisruptionBudget protects and counts those
	// it must still evict. berth serves no PodDisruptionBudgets, so every victim is
	// non-violating and there is a single pass.
	var victims []*v1.Pod
	for _, pi := range potential {
		nodeInfo.AddPod(pi)
		if err := runner.RunPreFilterExtensionAddPod(ctx, state, pod, pi, nodeInfo).AsError(); err != nil {
			return nil, framework.AsStatus(err)
		}
		if runner.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo).IsSuccess() {
			continue
		}
		if err := remove(pi); err != nil {
			return nil, framework.AsStatus(err)
		}
		victims = append(victims, pi.Pod)
	}
	if loggerV := klog.FromContext(ctx).V(5); loggerV.Enabled() {
		loggerV.Info("Pods are potential preemption victims on node", "pods", klog.KObjSlice(victims), "node", nodeInfo.Node().Name)
	}
	return victims, nil
}

// sortByImportance orders pods from the most important: higher priority, then earlier start
// (a pod that has run longer is kept in preference).
func sortByImportance(pods []*framework.PodInfo) {
	now := time.Now()
	slices.SortStableFunc(pods, func(a, b *framework.PodInfo) int {
		pa, pb := corev1helpers.PodPriority(a.Pod), corev1helpers.PodPriority(b.Pod)
		if pa != pb {
			return cmpDesc(int64(pa), int64(pb))
		}
		return startTime(a.Pod, now).Compare(startTime(b.Pod, now))
	})
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// startTime is when the pod started; an assumed or not yet started pod counts as starting now.
func startTime(pod *v1.Pod, now time.Time) time.Time {
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return now
}

// candidateScores rank candidates, a higher score better, each consulted only to break the
// ties of the ones before, as kube-scheduler's pickOneNodeForPreemption:
//  1. fewest PodDisruptionBudget violations;
//  2. lowest priority of the most important victim;
//  3. smallest sum of the victims' priorities;
//  4. fewest victims;
//  5. latest start among the most important victims (disturb the most recent work).
var candidateScores = []func(c *Candidate, now time.Time) int64{
	func(c *Candidate, _ time.Time) int64 { return -c.NumPDBViolations },
	func(c *Candidate, _ time.Time) int64 { return -int64(corev1helpers.PodPriority(c.Victims[0])) },
	func(c *Candidate, _ time.Time) int64 {
		var sum int64
		for _, p := range c.Victims {
			// Shifted to be non-negative, so that more victims of negative priority
			// never add up to less than fewer.
			sum += int64(corev1helpers.PodPriority(p)) + math.MaxInt32 + 1
		}
		return -sum
	},
	func(c *Candidate, _ time.Time) int64 { return -int64(len(c.Victims)) },
	func(c *Candidate, now time.Time) int64 { return earliestStartOfTopVictims(c.Victims, now).UnixNano() },
}

// pickOneNodeForPreemption picks the best candidate; after all the scores tie, the first.
func pickOneNodeForPreemption(candidates []*Candidate) *Candidate {
	if len(candidates) == 0 {
		return nil
	}
	now := time.Now()
	for _, score := range candidateScores {
		if len(candidates) == 1 {
			break
		}
		best := int64(math.MinInt64)
		var kept []*Candidate
		for _, c := range candidates {
			switch s := score(c, now); {
			case s > best:
				best, kept = s, append(kept[:0], c)
			case s == best:
				kept = append(kept, c)
			}
		}
		candidates = kept
	}
	return candidates[0]
}

// earliestStartOfTopVictims is the earliest start among the victims of the highest priority.
func earliestStartOfTopVictims(victims []*v1.Pod, now time.Time) time.Time {
	top := corev1helpers.PodPriority(victims[0])
	earliest := startTime(victims[0], now)
	for _, p := range victims[1:] {
		switch prio := corev1helpers.PodPriority(p); {
		case prio > top:
			top, earliest = prio, startTime(p, now)
		case prio == top && startTime(p, now).Before(earliest):
			earliest = startTime(p, now)
		}
	}
	return earliest
}
