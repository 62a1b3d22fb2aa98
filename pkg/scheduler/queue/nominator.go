package queue

import (
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// nominator remembers, by node, the pods that preemption nominated for that node while
// they wait for their victims to go, so that Filter counts them there (and a lower-priority
// pod does not take the room just freed).
//
// It has its own lock because Filter reads it for many nodes in parallel; the queue takes
// it only while holding its own lock (order: PriorityQueue.lock, then nominator.mu), and
// NominatedPodsForNode takes only this one.
//
// It keeps its own copy of each PodInfo: the queue updates its PodInfos in place, and a
// reader must never see one half-updated.
type nominator struct {
	// count is how many pods are nominated: Filter asks about every node of every cycle,
	// and with no nominations (the usual case) the answer must cost no lock.
	count atomic.Int64
	mu    sync.RWMutex
	// podLister, when set, keeps a nomination from being recorded for a pod that is gone or
	// already bound (preemption nominates asynchronously).
	podLister listersv1.PodLister
	byNode    map[string][]*framework.PodInfo
	nodeOf    map[types.UID]string
}

func newNominator(podLister listersv1.PodLister) *nominator {
	return &nominator{
		podLister: podLister,
		byNode:    map[string][]*framework.PodInfo{},
		nodeOf:    map[types.UID]string{},
	}
}

func (n *nominator) add(logger klog.Logger, pi *framework.PodInfo, ni *framework.NominatingInfo) {
	n.mu.Lock()
	n.addLocked(logger, pi, ni)
	n.mu.Unlock()
}

// addLocked records pi under the node that ni names (ModeOverride) or, with ModeNoop,
// under the pod's status.nominatedNodeName; a pod is nominated for one node at most.
func (n *nominator) addLocked(logger klog.Logger, pi *framework.PodInfo, ni *framework.NominatingInfo) {
	pod := pi.Pod
	n.deleteLocked(pod)

	nodeName := pod.Status.NominatedNodeName
	if ni.Mode() == framework.ModeOverride {
		nodeName = ni.NominatedNodeName
	}
	if nodeName == "" || pod.Spec.NodeName != "" {
		return
	}
	if n.podLister != nil {
		current, err := n.podLister.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || current.UID != pod.UID {
			logger.V(4).Info("Pod is gone, not recording its nomination", "pod", klog.KObj(pod))
			return
		}
		if current.Spec.NodeName != "" {
			logger.V(4).Info("Pod is already bound, not recording its nomination", "pod", klog.KObj(pod), "node", current.Spec.NodeName)
			return
		}
	}
	snapshot := *pi
	n.nodeOf[pod.UID] = nodeName
	n.count.Store(int64(len(n.nodeOf)))
	n.byNode[nodeName] = append(n.byNode[nodeName], &snapshot)
}

func (n *nominator) delete(pod *v1.Pod) {
	n.mu.Lock()
	n.deleteLocked(pod)
	n.mu.Unlock()
}

func (n *nominator) deleteLocked(pod *v1.Pod) {
	nodeName, ok := n.nodeOf[pod.UID]
	if !ok {
		return
	}
	delete(n.nodeOf, pod.UID)
	n.count.Store(int64(len(n.nodeOf)))
	pods := n.byNode[nodeName]
	for i, pi := range pods {
		if pi.Pod.UID == pod.UID {
			pods = append(pods[:i], pods[i+1:]...)
			break
		}
	}
	if len(pods) == 0 {
		delete(n.byNode, nodeName)
		return
	}
	n.byNode[nodeName] = pods
}

// update follows a pod's new version. When neither version carries a nominatedNodeName but
// the nominator knows one, that nomination was made in memory by preemption and the API
// has not caught up yet: it is kept.
func (n *nominator) update(logger klog.Logger, oldPod *v1.Pod, newPI *framework.PodInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ni *framework.NominatingInfo
	if oldPod.Status.NominatedNodeName == "" && newPI.Pod.Status.NominatedNodeName == "" {
		if nodeName, ok := n.nodeOf[oldPod.UID]; ok {
			ni = &framework.NominatingInfo{NominatingMode: framework.ModeOverride, NominatedNodeName: nodeName}
		}
	}
	n.deleteLocked(oldPod)
	n.addLocked(logger, newPI, ni)
}

// forNode returns copies of the PodInfos nominated for nodeName (the pods themselves are
// shared and, as every object from an informer, read-only); nil when there are none.
func (n *nominator) forNode(nodeName string) []*framework.PodInfo {
	if n.count.Load() == 0 {
		return nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	pods := n.byNode[nodeName]
	if len(pods) == 0 {
		return nil
	}
	copies := make([]framework.PodInfo, len(pods))
	out := make([]*framework.PodInfo, len(pods))
	for i, pi := range pods {
		copies[i] = *pi
		out[i] = &copies[i]
	}
	return out
}
