package defaultpreemption

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// fakeHandle is a Handle over a fixed snapshot, a fake runner, and a fake clientset.
type fakeHandle struct {
	lister    *fakeLister
	cs        kubernetes.Interface
	recorder  events.EventRecorder
	runner    framework.PluginsRunner
	nominator *fakeNominator
	waiting   *fakeWaitingPods
	// parallel runs Until on goroutines; otherwise it runs in order, for deterministic tests.
	parallel bool
}

func (h *fakeHandle) SnapshotSharedLister() framework.SharedLister           { return h.lister }
func (h *fakeHandle) ClientSet() kubernetes.Interface                        { return h.cs }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return nil }
func (h *fakeHandle) EventRecorder() events.EventRecorder                    { return h.recorder }
func (h *fakeHandle) Nominator() framework.PodNominator                      { return h.nominator }
func (h *fakeHandle) PluginsRunner() framework.PluginsRunner                 { return h.runner }
func (h *fakeHandle) WaitingPods() framework.WaitingPods                     { return h.waiting }
func (h *fakeHandle) Parallelizer() framework.Parallelizer {
	return fakeParallelizer{parallel: h.parallel}
}

type fakeParallelizer struct{ parallel bool }

func (p fakeParallelizer) Until(ctx context.Context, pieces int, do func(int), _ string) {
	if p.parallel {
		workqueue.ParallelizeUntil(ctx, 4, pieces, do)
		return
	}
	for i := 0; i < pieces && ctx.Err() == nil; i++ {
		do(i)
	}
}

// fakeLister is the snapshot: nodes in order.
type fakeLister struct{ nodes []*framework.NodeInfo }

func newLister(nodes []*v1.Node, pods []*v1.Pod) *fakeLister {
	l := &fakeLister{}
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		for _, p := range pods {
			if p.Spec.NodeName == n.Name {
				ni.AddPod(framework.NewPodInfo(p))
			}
		}
		l.nodes = append(l.nodes, ni)
	}
	return l
}

func (l *fakeLister) NodeInfos() framework.NodeInfoLister { return l }
func (l *fakeLister) List() ([]*framework.NodeInfo, error) {
	return l.nodes, nil
}
func (l *fakeLister) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) { return nil, nil }
func (l *fakeLister) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return nil, nil
}
func (l *fakeLister) Get(name string) (*framework.NodeInfo, error) {
	for _, n := range l.nodes {
		if n.Node().Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("node %q not found", name)
}

// fakeStatuses is what Filter said: statuses by node, absent ones UnschedulableAndUnresolvable.
type fakeStatuses map[string]*framework.Status

func (m fakeStatuses) Get(name string) *framework.Status {
	if s, ok := m[name]; ok {
		return s
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, "absent")
}

func (m fakeStatuses) NodesForStatusCode(l framework.NodeInfoLister, code framework.Code) ([]*framework.NodeInfo, error) {
	all, err := l.List()
	if err != nil {
		return nil, err
	}
	var out []*framework.NodeInfo
	for _, n := range all {
		if m.Get(n.Node().Name).Code() == code {
			out = append(out, n)
		}
	}
	return out, nil
}

// fakeRunner filters on cpu, memory and pod count as NodeResourcesFit does, and counts the
// PreFilter extension calls.
type fakeRunner struct {
	nominator *fakeNominator

	mu             sync.Mutex
	adds, removals int
}

func (r *fakeRunner) RunPreScorePlugins(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) *framework.Status {
	return nil
}

func (r *fakeRunner) RunScorePlugins(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) ([]framework.NodePluginScores, *framework.Status) {
	return nil, nil
}

func (r *fakeRunner) RunFilterPlugins(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	req := framework.NewPodInfo(pod).Requests
	var reasons []string
	if len(ni.Pods)+1 > int(ni.Allocatable.AllowedPodNumber) {
		reasons = append(reasons, "Too many pods")
	}
	if req.MilliCPU > 0 && ni.Requested.MilliCPU+req.MilliCPU > ni.Allocatable.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && ni.Requested.Memory+req.Memory > ni.Allocatable.Memory {
		reasons = append(reasons, "Insufficient memory")
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

func (r *fakeRunner) RunPreFilterExtensionAddPod(context.Context, *framework.CycleState, *v1.Pod, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	r.mu.Lock()
	r.adds++
	r.mu.Unlock()
	return nil
}

func (r *fakeRunner) RunPreFilterExtensionRemovePod(context.Context, *framework.CycleState, *v1.Pod, *framework.PodInfo, *framework.NodeInfo) *framework.Status {
	r.mu.Lock()
	r.removals++
	r.mu.Unlock()
	return nil
}

// RunFilterPluginsWithNominatedPods counts the pods nominated to the node with at least the
// pod's priority as if they were there.
func (r *fakeRunner) RunFilterPluginsWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if r.nominator != nil {
		var more []*framework.PodInfo
		for _, pi := range r.nominator.NominatedPodsForNode(ni.Node().Name) {
			if pi.Pod.UID != pod.UID && corev1helpers.PodPriority(pi.Pod) >= corev1helpers.PodPriority(pod) {
				more = append(more, pi)
			}
		}
		if len(more) > 0 {
			ni = ni.Clone()
			for _, pi := range more {
				ni.AddPod(pi)
			}
		}
	}
	return r.RunFilterPlugins(ctx, state, pod, ni)
}

type fakeNominator struct {
	byNode map[string][]*framework.PodInfo
}

func (n *fakeNominator) AddNominatedPod(*framework.PodInfo, *framework.NominatingInfo) {}
func (n *fakeNominator) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (n *fakeNominator) UpdateNominatedPod(*v1.Pod, *framework.PodInfo)                {}
func (n *fakeNominator) NominatedPodsForNode(node string) []*framework.PodInfo {
	if n == nil {
		return nil
	}
	return n.byNode[node]
}

type fakeWaitingPod struct {
	pod      *v1.Pod
	rejected string
}

func (w *fakeWaitingPod) GetPod() *v1.Pod             { return w.pod }
func (w *fakeWaitingPod) GetPendingPlugins() []string { return []string{"Gate"} }
func (w *fakeWaitingPod) Allow(string)                {}
func (w *fakeWaitingPod) Reject(plugin, msg string)   { w.rejected = plugin + ": " + msg }

type fakeWaitingPods struct {
	mu   sync.Mutex
	pods map[types.UID]*fakeWaitingPod
}

func (w *fakeWaitingPods) IterateOverWaitingPods(fn func(framework.WaitingPod)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pods {
		fn(p)
	}
}

func (w *fakeWaitingPods) GetWaitingPod(uid types.UID) framework.WaitingPod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.pods[uid]; ok {
		return p
	}
	return nil
}

func (w *fakeWaitingPods) RejectWaitingPod(uid types.UID) bool { return false }
