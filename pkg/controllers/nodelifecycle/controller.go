// Package nodelifecycle is the part of kube-controller-manager's node lifecycle controller
// that taints nodes by their conditions: the node agent reports MemoryPressure,
// DiskPressure, PIDPressure, NetworkUnavailable and Ready, and this controller turns them
// into NoSchedule taints (node.kubernetes.io/memory-pressure, ...), so that the scheduler,
// which sees nodes only through their taints, stops placing pods there. spec.unschedulable
// (kubectl cordon) becomes node.kubernetes.io/unschedulable the same way. Taint-based
// eviction (NoExecute) and marking silent nodes Unknown are not built yet.
package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// conditionTaints maps a node condition's status to the NoSchedule taint it brings.
var conditionTaints = map[v1.NodeConditionType]map[v1.ConditionStatus]string{
	v1.NodeReady: {
		v1.ConditionFalse:   v1.TaintNodeNotReady,
		v1.ConditionUnknown: v1.TaintNodeUnreachable,
	},
	v1.NodeMemoryPressure:     {v1.ConditionTrue: v1.TaintNodeMemoryPressure},
	v1.NodeDiskPressure:       {v1.ConditionTrue: v1.TaintNodeDiskPressure},
	v1.NodeNetworkUnavailable: {v1.ConditionTrue: v1.TaintNodeNetworkUnavailable},
	v1.NodePIDPressure:        {v1.ConditionTrue: v1.TaintNodePIDPressure},
}

// managed are the taint keys this controller owns (with effect NoSchedule): the condition
// taints and the unschedulable one.
var managed = func() map[string]bool {
	keys := map[string]bool{v1.TaintNodeUnschedulable: true}
	for _, byStatus := range conditionTaints {
		for _, key := range byStatus {
			keys[key] = true
		}
	}
	return keys
}()

// Controller keeps every node's condition taints in step with its conditions.
type Controller struct {
	client      kubernetes.Interface
	nodes       corelisters.NodeLister
	nodesSynced cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets a Warning event on a node whose tainting pass panicked.
	Recorder events.EventRecorder
}

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "nodelifecycle"

// NewController returns the controller fed by the node informer.
func NewController(client kubernetes.Interface, nodes coreinformers.NodeInformer) *Controller {
	c := &Controller{
		client: client,
		nodes:  nodes.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "node_lifecycle_controller"}),
	}
	reg, _ := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Node)
			n, ok2 := cur.(*v1.Node)
			// Heartbeats change nothing this controller reads: skip them.
			if ok1 && ok2 && equalTaints(desiredTaints(o), desiredTaints(n)) && equalTaints(managedTaints(o), managedTaints(n)) {
				return
			}
			c.enqueue(cur)
		},
	})
	c.nodesSynced = reg.HasSynced
	return c
}

func (c *Controller) enqueue(obj any) {
	if n, ok := obj.(*v1.Node); ok {
		c.queue.Add(n.Name)
	}
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informer never syncs while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "node lifecycle controller",
		Queue:          c.queue,
		Sync:           c.doNoScheduleTaintingPass,
		Reference:      func(name string) *v1.ObjectReference { return recovery.Reference("Node", name) },
		Recorder:       c.Recorder,
		KeyName:        "node",
		FailureMessage: "Tainting a node by its conditions failed",
		// The node agent updated its status meanwhile: retry from the cache, quietly.
		Expected: func(err error) (string, bool) {
			return "Node changed while tainting it; retrying", apierrors.IsConflict(err)
		},
	}
	return w.Run(ctx, workers, c.nodesSynced)
}

// doNoScheduleTaintingPass makes the node's managed NoSchedule taints exactly those its
// conditions and spec.unschedulable call for, leaving every other taint as it is.
func (c *Controller) doNoScheduleTaintingPass(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting node %s from cache: %w", name, err)
	}
	want := desiredTaints(node)
	if equalTaints(want, managedTaints(node)) {
		return nil
	}
	taints := append([]v1.Taint{}, want...)
	for _, t := range node.Spec.Taints {
		if !(t.Effect == v1.TaintEffectNoSchedule && managed[t.Key]) {
			taints = append(taints, t)
		}
	}
	// A JSON merge patch with the resourceVersion: a concurrent change to the taints (by
	// kubectl taint, say) makes it fail with a conflict and be retried from the cache.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	})
	if err != nil {
		return err
	}
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching the taints of node %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated the node's condition taints", "node", name, "taints", want)
	return nil
}

// desiredTaints are the NoSchedule taints the node's conditions call for.
func desiredTaints(node *v1.Node) []v1.Taint {
	var out []v1.Taint
	for _, cond := range node.Status.Conditions {
		if key, ok := conditionTaints[cond.Type][cond.Status]; ok {
			out = append(out, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		out = append(out, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	return out
}

// managedTaints are the node's taints this controller owns.
func managedTaints(node *v1.Node) []v1.Taint {
	var out []v1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule && managed[t.Key] {
			out = append(out, t)
		}
	}
	return out
}

// equalTaints compares taint sets by key (the effect is NoSchedule in both).
func equalTaints(a, b []v1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	keys := map[string]bool{}
	for _, t := range a {
		keys[t.Key] = true
	}
	for _, t := range b {
		if !keys[t.Key] {
			return false
		}
	}
	return true
}
