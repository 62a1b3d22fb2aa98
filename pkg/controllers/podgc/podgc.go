// Package podgc is berth's pod garbage collector, kube-controller-manager's podgc controller.
// It stands at the end of the pod's flow ("kubectl apply ─► API server ─► scheduler ─► node
// agent"), for the pods no node agent will ever finish: every 20 s it force-deletes
//
//   - terminated pods (Succeeded or Failed) beyond --terminated-pod-gc-threshold, evicted
//     and oldest first;
//   - terminating pods on a node that is not ready and tainted node.kubernetes.io/out-of-service
//     (the administrator says the node is gone for good);
//   - orphaned pods, bound to a node that does not exist, once the node has been missing from
//     the informer for 40 s and a live GET confirms it is gone; they are marked Failed with the
//     DisruptionTarget condition (reason DeletionByPodGC) first, so that their controllers know
//     why they went;
//   - terminating pods never scheduled, which no node agent will ever see.
//
// Each pass is a pure selection from the listers' pods and nodes (select.go), then the deletes.
package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

const (
	// DefaultTerminatedPodThreshold is --terminated-pod-gc-threshold's default.
	DefaultTerminatedPodThreshold = 12500
	// gcCheckPeriod is how often a pass runs, as upstream's.
	gcCheckPeriod = 20 * time.Second
	// quarantineTime is how long a node may be missing from the informer before a GET
	// decides whether it is gone.
	quarantineTime = 40 * time.Second
	// deleteParallelism bounds the concurrent deletes of one pass.
	deleteParallelism = 16
)

// controllerName names the controller in logs and berth_recovered_panics_total.
const controllerName = "podgc"

// PodGCController deletes the pods no node agent will finish. Build it with NewPodGC, start
// the informers and call Run.
type PodGCController struct {
	client      kubernetes.Interface
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	podsSynced  cache.InformerSynced
	nodesSynced cache.InformerSynced

	// nodeQueue holds the names of nodes missing from the informer, each for quarantineTime.
	nodeQueue workqueue.TypedDelayingInterface[string]
	threshold int
	clock     clock.PassiveClock
}

// NewPodGC returns a pod garbage collector; threshold is the number of terminated pods kept
// (0 keeps them all).
func NewPodGC(client kubernetes.Interface, podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer, threshold int) *PodGCController {
	return newPodGC(client, podInformer, nodeInformer, threshold, clock.RealClock{})
}

func newPodGC(client kubernetes.Interface, podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer, threshold int, clk clock.WithTicker) *PodGCController {
	return &PodGCController{
		client:      client,
		pods:        podInformer.Lister(),
		nodes:       nodeInformer.Lister(),
		podsSynced:  podInformer.Informer().HasSynced,
		nodesSynced: nodeInformer.Informer().HasSynced,
		nodeQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
			Name: "orphaned_pods_nodes", Clock: clk,
		}),
		threshold: threshold,
		clock:     clk,
	}
}

// Run runs a pass every 20 s until ctx is done. workers is ignored: a pass is one loop, as
// upstream's. A pass that panics is recorded and the next one runs on time.
func (gcc *PodGCController) Run(ctx context.Context, _ int) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting GC controller")
	defer func() {
		logger.Info("Shutting down GC controller")
		gcc.nodeQueue.ShutDown()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, gcc.podsSynced, gcc.nodesSynced) {
		if ctx.Err() == nil {
			return fmt.Errorf("the pod GC controller's informers did not sync")
		}
		return nil
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := recovery.Sync(ctx, controllerName, func() error { gcc.gc(ctx); return nil }); err != nil {
			logger.Error(err, "A pod GC pass failed")
		}
	}, gcCheckPeriod)
	return nil
}

// gc is one pass.
func (gcc *PodGCController) gc(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pods, err := gcc.pods.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Error while listing all pods")
		return
	}
	nodes, err := gcc.nodes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Error while listing all nodes")
		return
	}
	if gcc.threshold > 0 {
		if doomed := terminatedOverThreshold(pods, gcc.threshold); len(doomed) > 0 {
			logger.Info("Garbage collecting pods", "numPods", len(doomed))
			gcc.deleteAll(ctx, doomed, nil, "Failed to delete terminated pod")
		}
	}
	if doomed := terminatingOnOutOfServiceNodes(logger, pods, gcc.nodes); len(doomed) > 0 {
		logger.V(4).Info("Garbage collecting pods that are terminating on node tainted with node.kubernetes.io/out-of-service", "numPods", len(doomed))
		gcc.deleteAll(ctx, doomed, nil, "Failed to delete terminating pod on out-of-service node")
	}
	gcc.gcOrphaned(ctx, pods, nodes)
	for _, pod := range unscheduledTerminating(pods) {
		logger.V(2).Info("Found unscheduled terminating Pod not assigned to any Node, deleting", "pod", klog.KObj(pod))
		if gcc.deleteOne(ctx, pod, nil, "Failed to delete unscheduled terminating pod") {
			logger.Info("Forced deletion of unscheduled terminating Pod succeeded", "pod", klog.KObj(pod))
		}
	}
}

// gcOrphaned deletes the pods bound to nodes that are gone: missing from the informer for the
// quarantine time, and confirmed missing by a GET.
func (gcc *PodGCController) gcOrphaned(ctx context.Context, pods []*corev1.Pod, nodes []*corev1.Node) {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("GC'ing orphaned")
	existing := sets.New[string]()
	for _, node := range nodes {
		existing.Insert(node.Name)
	}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" && !existing.Has(pod.Spec.NodeName) {
			gcc.nodeQueue.AddAfter(pod.Spec.NodeName, quarantineTime)
		}
	}
	deleted := gcc.discoverDeletedNodes(ctx, existing)
	for _, pod := range pods {
		if !deleted.Has(pod.Spec.NodeName) {
			continue
		}
		logger.V(2).Info("Found orphaned Pod assigned to the Node, deleting", "pod", klog.KObj(pod), "node", klog.KRef("", pod.Spec.NodeName))
		condition := &corev1.PodCondition{
			Type:               corev1.DisruptionTarget,
			ObservedGeneration: pod.Generation,
			Status:             corev1.ConditionTrue,
			Reason:             "DeletionByPodGC",
			Message:            "PodGC: node no longer exists",
		}
		if gcc.deleteOne(ctx, pod, condition, "Failed to delete orphaned pod") {
			logger.Info("Forced deletion of orphaned Pod succeeded", "pod", klog.KObj(pod))
		}
	}
}

// discoverDeletedNodes takes the nodes whose quarantine is over off the queue and returns
// those still missing from the informer that a GET does not find either.
func (gcc *PodGCController) discoverDeletedNodes(ctx context.Context, existing sets.Set[string]) sets.Set[string] {
	deleted := sets.New[string]()
	for gcc.nodeQueue.Len() > 0 {
		name, quit := gcc.nodeQueue.Get()
		if quit {
			return deleted
		}
		if !existing.Has(name) {
			_, err := gcc.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				deleted.Insert(name)
			case err != nil:
				// The node is queued again by the next pass if its pods still need it.
				klog.FromContext(ctx).Error(err, "Error while getting node", "node", klog.KRef("", name))
			}
		}
		gcc.nodeQueue.Done(name)
	}
	return deleted
}

// deleteAll deletes pods concurrently, each under the panic boundary.
func (gcc *PodGCController) deleteAll(ctx context.Context, pods []*corev1.Pod, condition *corev1.PodCondition, failure string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, deleteParallelism)
	for _, pod := range pods {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			gcc.deleteOne(ctx, pod, condition, failure)
		})
	}
	wg.Wait()
}

// deleteOne marks pod Failed (with condition, if any) and force-deletes it, reporting whether
// it succeeded; a failure is logged with the message failure.
func (gcc *PodGCController) deleteOne(ctx context.Context, pod *corev1.Pod, condition *corev1.PodCondition, failure string) bool {
	err := recovery.Sync(ctx, controllerName, func() error { return gcc.markFailedAndDeletePod(ctx, pod, condition) })
	if err != nil {
		klog.FromContext(ctx).Error(err, failure, "pod", klog.KObj(pod))
		return false
	}
	return true
}

// markFailedAndDeletePod moves a pod not yet terminated to Failed (an orphan would otherwise
// stay Running for ever, with no node agent to end it), then deletes it with no grace period,
// its UID as a precondition so that a successor of the same name is safe.
func (gcc *PodGCController) markFailedAndDeletePod(ctx context.Context, pod *corev1.Pod, condition *corev1.PodCondition) error {
	klog.FromContext(ctx).Info("PodGC is force deleting Pod", "pod", klog.KObj(pod))
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		status := failedStatus(pod, condition, metav1.NewTime(gcc.clock.Now()))
		patch, err := statusPatch(pod.UID, pod.Status, status)
		if err != nil {
			return err
		}
		if _, err := gcc.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("failed to patch status %q for pod %q/%q: %w", patch, pod.Namespace, pod.Name, err)
		}
	}
	err := gcc.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// failedStatus is pod's status moved to Failed, with condition set (its transition time now
// unless the condition already had its status).
func failedStatus(pod *corev1.Pod, condition *corev1.PodCondition, now metav1.Time) corev1.PodStatus {
	status := *pod.Status.DeepCopy()
	status.Phase = corev1.PodFailed
	status.ObservedGeneration = pod.Generation
	if condition == nil {
		return status
	}
	c := *condition
	c.LastTransitionTime = now
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			if status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = status.Conditions[i].LastTransitionTime
			}
			status.Conditions[i] = c
			return status
		}
	}
	status.Conditions = append(status.Conditions, c)
	return status
}

// statusPatch is the strategic merge patch from old to cur, with the pod's UID as a
// precondition (upstream's PatchPodStatus).
func statusPatch(uid types.UID, old, cur corev1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, fmt.Errorf("marshalling the old status: %w", err)
	}
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: cur})
	if err != nil {
		return nil, fmt.Errorf("marshalling the new status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("creating the status patch: %w", err)
	}
	return patch, nil
}
