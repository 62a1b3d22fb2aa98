package framework

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
)

// MaxNodeScore and MinNodeScore bound the score a plugin gives after normalization.
const (
	MaxNodeScore int64 = 100
	MinNodeScore int64 = 0
	// MaxTotalScore bounds the weighted sum.
	MaxTotalScore int64 = 1<<63 - 1
)

// Plugin is what every plugin is.
type Plugin interface {
	Name() string
}

// PreEnqueuePlugin decides whether a pod may enter activeQ at all (scheduling gates).
type PreEnqueuePlugin interface {
	Plugin
	PreEnqueue(ctx context.Context, pod *v1.Pod) *Status
}

// QueueSortPlugin orders activeQ. A profile has exactly one.
type QueueSortPlugin interface {
	Plugin
	Less(a, b *QueuedPodInfo) bool
}

// EnqueueExtensions names the cluster events after which a pod this plugin rejected may fit,
// so that the queue moves it back to activeQ only then.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister(ctx context.Context) ([]ClusterEventWithHint, error)
}

// PreFilterResult narrows the nodes to consider; nil NodeNames means all.
type PreFilterResult struct {
	NodeNames sets.Set[string]
}

// AllNodes reports whether the result leaves every node in play.
func (r *PreFilterResult) AllNodes() bool { return r == nil || r.NodeNames == nil }

// Merge intersects two results.
func (r *PreFilterResult) Merge(o *PreFilterResult) *PreFilterResult {
	if r.AllNodes() {
		return o
	}
	if o.AllNodes() {
		return r
	}
	return &PreFilterResult{NodeNames: r.NodeNames.Intersection(o.NodeNames)}
}

// PreFilterPlugin computes, once per cycle, what its Filter needs for every node.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (*PreFilterResult, *Status)
	// PreFilterExtensions lets preemption update the precomputed state as it removes (or
	// adds back) pods; nil when the state does not depend on other pods.
	PreFilterExtensions() PreFilterExtensions
}

// PreFilterExtensions update PreFilter's state for a pod added to or removed from a node.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}

// FilterPlugin says whether the pod fits a node. It is called for many nodes in parallel and
// must not change nodeInfo.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// NodeToStatusReader is what Filter said of each node.
type NodeToStatusReader interface {
	// Get returns the status of a node; for a node never filtered, the absent-node status.
	Get(nodeName string) *Status
	// NodesForStatusCode lists the nodes (of all) with a code.
	NodesForStatusCode(lister NodeInfoLister, code Code) ([]*NodeInfo, error)
}

// PostFilterResult is what PostFilter (preemption) achieved.
type PostFilterResult struct {
	*NominatingInfo
}

// NominatingMode says whether a PostFilter result changes the pod's nominated node.
type NominatingMode int

const (
	// ModeNoop leaves status.nominatedNodeName alone.
	ModeNoop NominatingMode = iota
	// ModeOverride sets it to NominatedNodeName.
	ModeOverride
)

// NominatingInfo is a node nominated for a pod that waits for victims to go.
type NominatingInfo struct {
	NominatedNodeName string
	NominatingMode    NominatingMode
}

// Mode is the mode, ModeNoop for nil.
func (n *NominatingInfo) Mode() NominatingMode {
	if n == nil {
		return ModeNoop
	}
	return n.NominatingMode
}

// PostFilterPlugin runs when no node fits (DefaultPreemption).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod, filteredNodeStatusMap NodeToStatusReader) (*PostFilterResult, *Status)
}

// PreScorePlugin computes, once per cycle, what its Score needs.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// NodeScore is a node's score from one plugin, or the weighted total.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeScoreList is a score per feasible node.
type NodeScoreList []NodeScore

// ScorePlugin ranks the feasible nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	// ScoreExtensions returns NormalizeScore, or nil when scores are already 0..100.
	ScoreExtensions() ScoreExtensions
}

// ScoreExtensions scale a plugin's raw scores to MinNodeScore..MaxNodeScore.
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores NodeScoreList) *Status
}

// ReservePlugin keeps its own books of the assumed pod; Unreserve undoes it on failure.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PermitPlugin allows, rejects, or holds (Wait, with a timeout) the binding of a pod.
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (*Status, time.Duration)
}

// PreBindPlugin prepares the binding (volumes, ...).
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// BindPlugin binds; the first that does not Skip binds the pod.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// PostBindPlugin learns of a successful binding.
type PostBindPlugin interface {
	Plugin
	PostBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// NodeInfoLister reads the cycle's snapshot of nodes.
type NodeInfoLister interface {
	// List returns every node.
	List() ([]*NodeInfo, error)
	// HavePodsWithAffinityList returns the nodes with pods that have affinity terms.
	HavePodsWithAffinityList() ([]*NodeInfo, error)
	// HavePodsWithRequiredAntiAffinityList returns the nodes with pods that have required
	// anti-affinity terms.
	HavePodsWithRequiredAntiAffinityList() ([]*NodeInfo, error)
	// Get returns one node.
	Get(nodeName string) (*NodeInfo, error)
}

// SharedLister is the snapshot as plugins see it.
type SharedLister interface {
	NodeInfos() NodeInfoLister
}

// Parallelizer runs work over many pieces on a bounded number of goroutines.
type Parallelizer interface {
	// Until calls do(i) for i in [0, pieces) in parallel and returns when all are done or ctx ends.
	Until(ctx context.Context, pieces int, do func(i int), operation string)
}

// PodNominator remembers which pods wait for which node after preemption, so that Filter
// counts them there.
type PodNominator interface {
	AddNominatedPod(pod *PodInfo, nominatingInfo *NominatingInfo)
	DeleteNominatedPodIfExists(pod *v1.Pod)
	UpdateNominatedPod(oldPod *v1.Pod, newPodInfo *PodInfo)
	NominatedPodsForNode(nodeName string) []*PodInfo
}

// PluginsRunner runs a profile's plugins; preemption uses it to test "what if these pods
// were gone".
type PluginsRunner interface {
	RunPreScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
	RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) ([]NodePluginScores, *Status)
	RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
	// RunFilterPluginsWithNominatedPods filters as if the higher-priority pods nominated to
	// the node were already there.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// NodePluginScores are a node's scores, per plugin and in total.
type NodePluginScores struct {
	Name       string
	Scores     []PluginScore
	TotalScore int64
}

// PluginScore is one plugin's weighted score.
type PluginScore struct {
	Name  string
	Score int64
}

// WaitingPod is a pod a Permit plugin holds.
type WaitingPod interface {
	GetPod() *v1.Pod
	GetPendingPlugins() []string
	Allow(pluginName string)
	Reject(pluginName, msg string)
}

// WaitingPods are the pods held at Permit.
type WaitingPods interface {
	IterateOverWaitingPods(fn func(WaitingPod))
	GetWaitingPod(uid types.UID) WaitingPod
	RejectWaitingPod(uid types.UID) bool
}

// Handle is what a plugin gets when it is built: the cluster as the scheduler sees it, the
// API, and the runner and nominator that preemption needs.
type Handle interface {
	SnapshotSharedLister() SharedLister
	ClientSet() kubernetes.Interface
	SharedInformerFactory() informers.SharedInformerFactory
	EventRecorder() events.EventRecorder
	Parallelizer() Parallelizer
	Nominator() PodNominator
	PluginsRunner() PluginsRunner
	WaitingPods() WaitingPods
}

// PluginFactory builds a plugin from its arguments (the k8s.io/kube-scheduler/config/v1
// args type of the plugin, or nil for its defaults).
type PluginFactory func(ctx context.Context, args runtime.Object, h Handle) (Plugin, error)

// Registry maps plugin names to their factories.
type Registry map[string]PluginFactory
