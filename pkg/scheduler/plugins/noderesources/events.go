package noderesources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// EventsToRegister names what can make room for a pod Fit rejected: a pod leaving a node, a
// pod shrinking in place (or the rejected pod itself shrinking), a new node, or a node whose
// allocatable grew.
func (f *Fit) EventsToRegister(_ context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, QueueingHintFn: f.isSchedulableAfterPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.UpdatePodScaleDown}, QueueingHintFn: f.isSchedulableAfterPodScaleDown},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable}, QueueingHintFn: f.isSchedulableAfterNodeChange},
	}, nil
}

// asPods reads an event's objects (either may be nil; a deleted object may come as a
// tombstone).
func asPods(oldObj, newObj interface{}) (oldPod, newPod *v1.Pod, err error) {
	return as[*v1.Pod](oldObj, newObj)
}

func as[T any](oldObj, newObj interface{}) (oldT, newT T, err error) {
	var ok bool
	if newObj != nil {
		if newT, ok = newObj.(T); !ok {
			return oldT, newT, fmt.Errorf("expected %T, but got %T", newT, newObj)
		}
	}
	if oldObj != nil {
		if tombstone, isTombstone := oldObj.(cache.DeletedFinalStateUnknown); isTombstone {
			oldObj = tombstone.Obj
		}
		if oldT, ok = oldObj.(T); !ok {
			return oldT, newT, fmt.Errorf("expected %T, but got %T", oldT, oldObj)
		}
	}
	return oldT, newT, nil
}

// isSchedulableAfterPodDeleted: a deleted pod frees room only if it held some, on a node or
// as a nominated pod.
func (f *Fit) isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	deleted, _, err := asPods(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "" {
		logger.V(5).Info("the deleted pod was unscheduled and it wouldn't make the unscheduled pod schedulable", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

// isSchedulableAfterPodScaleDown: the rejected pod asking for less may now fit; another pod
// frees room only if it is on a node and gave back some resource the rejected pod wants.
func (f *Fit) isSchedulableAfterPodScaleDown(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	original, modified, err := asPods(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if original == nil || modified == nil {
		return framework.Queue, fmt.Errorf("a scale-down event needs both the old and the new pod")
	}
	if modified.UID == pod.UID {
		logger.V(5).Info("the target pod got scaled down and it may be schedulable now", "pod", klog.KObj(pod))
		return framework.Queue, nil
	}
	if modified.Spec.NodeName == "" || !requestsDecreased(pod, original, modified) {
		logger.V(5).Info("pod got scaled down, but the modification isn't related to the resource requests of the target pod", "pod", klog.KObj(pod), "modifiedPod", klog.KObj(modified))
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

// requestsDecreased reports whether modified asks for less than original of some resource
// that target requests.
func requestsDecreased(target, original, modified *v1.Pod) bool {
	opts := podResourceOptions()
	before := framework.NewResource(resourcehelper.PodRequests(original, opts))
	after := framework.NewResource(resourcehelper.PodRequests(modified, opts))
	for name, q := range resourcehelper.PodRequests(target, opts) {
		if q.IsZero() {
			continue
		}
		switch name {
		case v1.ResourceCPU:
			if before.MilliCPU > after.MilliCPU {
				return true
			}
		case v1.ResourceMemory:
			if before.Memory > after.Memory {
				return true
			}
		case v1.ResourceEphemeralStorage:
			if before.EphemeralStorage > after.EphemeralStorage {
				return true
			}
		default:
			if framework.IsScalarResourceName(name) && before.ScalarResources[name] > after.ScalarResources[name] {
				return true
			}
		}
	}
	return false
}

// isSchedulableAfterNodeChange: a node helps only if the pod fits in it when empty, and,
// for an update, only if its allocatable grew in something the pod asks for (or in pods).
func (f *Fit) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	original, modified, err := as[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if modified == nil {
		return framework.Queue, fmt.Errorf("a node event needs the new node")
	}
	r := computePodRequest(pod, f.ignoredResources, f.ignoredResourceGroups)
	empty := framework.NewNodeInfo()
	empty.SetNode(modified)
	if len(fitsRequest(r, empty, nil)) > 0 {
		logger.V(5).Info("node was created or updated, but it doesn't have enough resource(s) to accommodate this pod", "pod", klog.KObj(pod), "node", klog.KObj(modified))
		return framework.QueueSkip, nil
	}
	if original == nil {
		return framework.Queue, nil
	}
	if !allocatableIncreased(r, framework.NewResource(original.Status.Allocatable), empty.Allocatable) {
		logger.V(5).Info("node was updated, but haven't changed the pod's resource requestments fit assessment", "pod", klog.KObj(pod), "node", klog.KObj(modified))
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

func allocatableIncreased(r *podRequest, before, after *framework.Resource) bool {
	if after.AllowedPodNumber > before.AllowedPodNumber {
		return true
	}
	if (r.milliCPU > 0 && after.MilliCPU > before.MilliCPU) ||
		(r.memory > 0 && after.Memory > before.Memory) ||
		(r.ephemeralStorage > 0 && after.EphemeralStorage > before.EphemeralStorage) {
		return true
	}
	for _, s := range r.scalars {
		if after.ScalarResources[s.name] > before.ScalarResources[s.name] {
			return true
		}
	}
	return false
}
