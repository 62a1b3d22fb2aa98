package scheduler

import (
	"context"
	"fmt"
	"reflect"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
	"github.com/berth-cluster/berth/pkg/util/managedfields"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The cluster events the scheduler feeds the queue, named as kube-scheduler names them.
var (
	nodeAdd           = framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add, Label: "NodeAdd"}
	assignedPodDelete = framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete, Label: "AssignedPodDelete"}
)

// registerPodInformer makes the factory's pod informer watch only pods that are not finished
// (a Succeeded or Failed pod holds nothing on its node) and keep them without their
// managedFields, as kube-scheduler does: no plugin reads them, and they are a large part of
// every cached pod.
func registerPodInformer(f informers.SharedInformerFactory) {
	f.InformerFor(&v1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		selector := fields.ParseSelectorOrDie("status.phase!=" + string(v1.PodSucceeded) + ",status.phase!=" + string(v1.PodFailed))
		informer := coreinformers.NewFilteredPodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		}, func(o *metav1.ListOptions) { o.FieldSelector = selector.String() })
		if err := informer.SetTransform(managedfields.Trim); err != nil {
			panic(err) // only fails once the informer has started, which it has not
		}
		return informer
	})
}

// addAllEventHandlers wires the informers to the cache (bound pods, nodes) and to the queue
// (unbound pods of our profiles; cluster events that may help waiting pods).
func (s *Scheduler) addAllEventHandlers(f informers.SharedInformerFactory) error {
	pods := f.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(s.recovering(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			pod, ok := podOf(obj)
			return ok && pod.Spec.NodeName != ""
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    s.addPodToCache,
			UpdateFunc: s.updatePodInCache,
			DeleteFunc: s.deletePodFromCache,
		},
	})); err != nil {
		return err
	}
	if _, err := pods.AddEventHandler(s.recovering(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			pod, ok := podOf(obj)
			return ok && pod.Spec.NodeName == "" && s.responsibleForPod(pod)
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    s.addPodToQueue,
			UpdateFunc: s.updatePodInQueue,
			DeleteFunc: s.deletePodFromQueue,
		},
	})); err != nil {
		return err
	}
	_, err := f.Core().V1().Nodes().Informer().AddEventHandler(s.recovering(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.addNode,
		UpdateFunc: s.updateNode,
		DeleteFunc: s.deleteNode,
	}))
	return err
}

// recovering keeps a panic in one event's handling (the cache's, the queue's, a plugin's
// QueueingHint) from ending the informer's goroutine, and with it the process: the event is
// logged, counted and dropped, and the next resync or event of the object corrects the
// cache or the queue.
func (s *Scheduler) recovering(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return recoveringHandler{handler: h, ctx: klog.NewContext(context.Background(), s.logger)}
}

type recoveringHandler struct {
	handler cache.ResourceEventHandler
	ctx     context.Context
}

func (r recoveringHandler) OnAdd(obj interface{}, isInInitialList bool) {
	defer panics.Recover(r.ctx, framework.PanicComponent, nil)
	r.handler.OnAdd(obj, isInInitialList)
}

func (r recoveringHandler) OnUpdate(oldObj, newObj interface{}) {
	defer panics.Recover(r.ctx, framework.PanicComponent, nil)
	r.handler.OnUpdate(oldObj, newObj)
}

func (r recoveringHandler) OnDelete(obj interface{}) {
	defer panics.Recover(r.ctx, framework.PanicComponent, nil)
	r.handler.OnDelete(obj)
}

// podOf unwraps a pod, also from a deletion tombstone.
func podOf(obj interface{}) (*v1.Pod, bool) {
	switch t := obj.(type) {
	case *v1.Pod:
		return t, true
	case cache.DeletedFinalStateUnknown:
		p, ok := t.Obj.(*v1.Pod)
		return p, ok
	}
	return nil, false
}

func nodeOf(obj interface{}) (*v1.Node, bool) {
	switch t := obj.(type) {
	case *v1.Node:
		return t, true
	case cache.DeletedFinalStateUnknown:
		n, ok := t.Obj.(*v1.Node)
		return n, ok
	}
	return nil, false
}

func (s *Scheduler) addPodToQueue(obj interface{}) {
	pod, _ := podOf(obj)
	s.Queue.Add(s.logger, pod)
}

func (s *Scheduler) updatePodInQueue(oldObj, newObj interface{}) {
	oldPod, _ := podOf(oldObj)
	newPod, _ := podOf(newObj)
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return // a resync, nothing changed
	}
	// Our own in-flight binding: the informer caught up with the assumed pod.
	if assumed, _ := s.Cache.IsAssumedPod(newPod); assumed {
		return
	}
	s.Queue.Update(s.logger, oldPod, newPod)
}

func (s *Scheduler) deletePodFromQueue(obj interface{}) {
	pod, ok := podOf(obj)
	if !ok {
		return
	}
	s.Queue.Delete(pod)
	// A pod waiting at Permit must not bind once it is gone.
	for _, fwk := range s.Profiles {
		if fwk.WaitingPods().RejectWaitingPod(pod.UID) {
			break
		}
	}
}

func (s *Scheduler) addPodToCache(obj interface{}) {
	pod, _ := podOf(obj)
	if err := s.Cache.AddPod(s.logger, pod); err != nil {
		s.logger.Error(err, "Adding a bound pod to the cache", "pod", klog.KObj(pod))
	}
	s.Queue.AssignedPodAdded(s.logger, pod)
	s.recordCacheSize()
}

func (s *Scheduler) updatePodInCache(oldObj, newObj interface{}) {
	oldPod, _ := podOf(oldObj)
	newPod, _ := podOf(newObj)
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	if err := s.Cache.UpdatePod(s.logger, oldPod, newPod); err != nil {
		s.logger.Error(err, "Updating a bound pod in the cache", "pod", klog.KObj(newPod))
	}
	event := framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: podUpdateActions(oldPod, newPod), Label: "AssignedPodUpdate"}
	if event.ActionType != 0 {
		s.Queue.AssignedPodUpdated(s.logger, oldPod, newPod, event)
	}
}

func (s *Scheduler) deletePodFromCache(obj interface{}) {
	pod, ok := podOf(obj)
	if !ok {
		return
	}
	if err := s.Cache.RemovePod(s.logger, pod); err != nil {
		s.logger.Error(err, "Removing a bound pod from the cache", "pod", klog.KObj(pod))
	}
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, assignedPodDelete, pod, nil, nil)
	s.recordCacheSize()
}

func (s *Scheduler) addNode(obj interface{}) {
	node, _ := nodeOf(obj)
	s.Cache.AddNode(s.logger, node)
	s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, nodeAdd, nil, node, nil)
	s.recordCacheSize()
}

func (s *Scheduler) updateNode(oldObj, newObj interface{}) {
	oldNode, _ := nodeOf(oldObj)
	newNode, _ := nodeOf(newObj)
	if oldNode.ResourceVersion == newNode.ResourceVersion {
		return
	}
	s.Cache.UpdateNode(s.logger, oldNode, newNode)
	for _, e := range nodeUpdateEvents(oldNode, newNode) {
		s.Queue.MoveAllToActiveOrBackoffQueue(s.logger, e, oldNode, newNode, nil)
	}
}

func (s *Scheduler) deleteNode(obj interface{}) {
	node, ok := nodeOf(obj)
	if !ok {
		return
	}
	if err := s.Cache.RemoveNode(s.logger, node); err != nil {
		s.logger.Error(err, "Removing a node from the cache", "node", klog.KObj(node))
	}
	s.recordCacheSize()
}

func (s *Scheduler) recordCacheSize() {
	metrics.CacheSize.WithLabelValues(metrics.CacheNodes).Set(float64(s.Cache.NodeCount()))
	metrics.CacheSize.WithLabelValues(metrics.CachePods).Set(float64(s.Cache.PodCount()))
}

// nodeUpdateEvents names what changed in a node that can matter to scheduling; a change of
// heartbeat times alone is none. spec.unschedulable counts as a taint change, as in
// kube-scheduler (it is the node.kubernetes.io/unschedulable taint in all but name).
func nodeUpdateEvents(oldNode, newNode *v1.Node) []framework.ClusterEvent {
	var events []framework.ClusterEvent
	add := func(a framework.ActionType, label string) {
		events = append(events, framework.ClusterEvent{Resource: framework.Node, ActionType: a, Label: label})
	}
	if !apiequality.Semantic.DeepEqual(oldNode.Status.Allocatable, newNode.Status.Allocatable) {
		add(framework.UpdateNodeAllocatable, "NodeAllocatableChange")
	}
	if !reflect.DeepEqual(oldNode.Labels, newNode.Labels) {
		add(framework.UpdateNodeLabel, "NodeLabelChange")
	}
	if !reflect.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) || oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable {
		add(framework.UpdateNodeTaint, "NodeTaintChange")
	}
	if !conditionsEqual(oldNode.Status.Conditions, newNode.Status.Conditions) {
		add(framework.UpdateNodeCondition, "NodeConditionChange")
	}
	if !reflect.DeepEqual(oldNode.Annotations, newNode.Annotations) {
		add(framework.UpdateNodeAnnotation, "NodeAnnotationChange")
	}
	return events
}

// conditionsEqual compares type, status and reason, not the timestamps a node agent moves on
// every heartbeat.
func conditionsEqual(a, b []v1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[v1.NodeConditionType]string, len(a))
	for _, c := range a {
		m[c.Type] = fmt.Sprint(c.Status, c.Reason)
	}
	for _, c := range b {
		if m[c.Type] != fmt.Sprint(c.Status, c.Reason) {
			return false
		}
	}
	return true
}

// podUpdateActions names what changed in a bound pod that can matter to waiting pods.
func podUpdateActions(oldPod, newPod *v1.Pod) framework.ActionType {
	var a framework.ActionType
	if !reflect.DeepEqual(oldPod.Labels, newPod.Labels) {
		a |= framework.UpdatePodLabel
	}
	if !apiequality.Semantic.DeepEqual(framework.PodRequests(oldPod), framework.PodRequests(newPod)) {
		a |= framework.UpdatePodScaleDown
	}
	return a
}
