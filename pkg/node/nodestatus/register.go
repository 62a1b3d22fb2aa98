package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"
)

const (
	// The deprecated beta OS and architecture labels, still set by the kubelet.
	betaLabelOS   = "beta.kubernetes.io/os"
	betaLabelArch = "beta.kubernetes.io/arch"
	// controllerManagedAttachAnnotation says the attach/detach controller, not the node agent,
	// attaches volumes; the kubelet sets it by default.
	controllerManagedAttachAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"

	maxRegistrationBackoff = 7 * time.Second
)

// defaultLabels are the labels the node agent owns on an existing Node: it puts back the values
// it would register with.
var defaultLabels = []string{
	v1.LabelHostname, v1.LabelTopologyZone, v1.LabelTopologyRegion, v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion, v1.LabelInstanceTypeStable, v1.LabelInstanceType,
	v1.LabelOSStable, v1.LabelArchStable, v1.LabelWindowsBuild, betaLabelOS, betaLabelArch,
}

// registerWithAPIServer creates the node's Node, or adopts the existing one, retrying with a
// back-off (100 ms doubling to 7 s) until it succeeds or ctx ends. Called with mu held.
func (c *Controller) registerWithAPIServer(ctx context.Context) {
	logger := klog.FromContext(ctx)
	backoff := 100 * time.Millisecond
	for !c.registered && ctx.Err() == nil {
		node, events := c.initialNode(ctx)
		logger.Info("Attempting to register node", "node", klog.KObj(node))
		if err := c.tryRegisterWithAPIServer(ctx, node); err != nil {
			logger.Error(err, "Unable to register node with API server", "node", klog.KObj(node))
			select {
			case <-ctx.Done():
			case <-c.clock.After(backoff):
			}
			backoff = min(2*backoff, maxRegistrationBackoff)
			continue
		}
		logger.Info("Successfully registered node", "node", klog.KObj(node))
		c.registered = true
		c.record(events)
	}
}

// initialNode is the Node this node agent registers: its labels, taints, pod CIDR and status.
func (c *Controller) initialNode(ctx context.Context) (*v1.Node, []event) {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.cfg.NodeName,
			Labels: map[string]string{
				v1.LabelHostname:   c.cfg.Hostname,
				v1.LabelOSStable:   goruntime.GOOS,
				v1.LabelArchStable: goruntime.GOARCH,
				betaLabelOS:        goruntime.GOOS,
				betaLabelArch:      goruntime.GOARCH,
			},
			Annotations: map[string]string{controllerManagedAttachAnnotation: "true"},
		},
		Spec: v1.NodeSpec{Taints: slices.Clone(c.cfg.Taints)},
	}
	for k, v := range c.cfg.Labels {
		node.Labels[k] = v
	}
	if c.cfg.PodCIDR != "" {
		cidrs := strings.Split(c.cfg.PodCIDR, ",")
		node.Spec.PodCIDR, node.Spec.PodCIDRs = cidrs[0], cidrs
	}
	events, errs := setNodeStatus(&c.cfg, node, c.readInputs(ctx))
	for _, err := range errs {
		klog.FromContext(ctx).Error(err, "Failed to set some node status fields", "node", klog.KObj(node))
	}
	return node, events
}

// tryRegisterWithAPIServer creates node; if a Node of that name exists, it is this node's from
// an earlier run: the agent keeps it and puts back its default labels, the attach/detach
// annotation and the huge page capacities.
func (c *Controller) tryRegisterWithAPIServer(ctx context.Context, node *v1.Node) error {
	_, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return err
	}
	existing, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("error getting existing node: %w", err)
	}
	klog.FromContext(ctx).Info("Node was previously registered", "node", klog.KObj(node))
	updated := existing.DeepCopy()
	if reconcileExistingNode(node, updated) {
		if _, err := c.patchNodeStatus(ctx, existing, updated); err != nil {
			return fmt.Errorf("error updating existing node: %w", err)
		}
	}
	return nil
}

// reconcileExistingNode makes existing carry what the node agent owns of initial; it reports
// whether anything changed.
func reconcileExistingNode(initial, existing *v1.Node) bool {
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, label := range defaultLabels {
		want, ok := initial.Labels[label]
		if !ok {
			continue
		}
		if existing.Labels[label] != want {
			existing.Labels[label] = want
			changed = true
		}
		if existing.Labels[label] == "" {
			delete(existing.Labels, label)
		}
	}
	if want, ok := initial.Annotations[controllerManagedAttachAnnotation]; existing.Annotations[controllerManagedAttachAnnotation] != want {
		if ok {
			if existing.Annotations == nil {
				existing.Annotations = map[string]string{}
			}
			existing.Annotations[controllerManagedAttachAnnotation] = want
		} else {
			delete(existing.Annotations, controllerManagedAttachAnnotation)
		}
		changed = true
	}
	if existing.Status.Capacity == nil {
		existing.Status.Capacity = initial.Status.Capacity.DeepCopy()
		changed = true
	}
	if existing.Status.Allocatable == nil {
		existing.Status.Allocatable = initial.Status.Allocatable.DeepCopy()
		changed = true
	}
	// Huge page sizes: as the machine has them now.
	for name, q := range initial.Status.Capacity {
		if !isHugePages(name) {
			continue
		}
		if have, ok := existing.Status.Capacity[name]; !ok || have.Cmp(q) != 0 {
			existing.Status.Capacity[name] = q.DeepCopy()
			changed = true
		}
		want := initial.Status.Allocatable[name]
		if have, ok := existing.Status.Allocatable[name]; !ok || have.Cmp(want) != 0 {
			existing.Status.Allocatable[name] = want.DeepCopy()
			changed = true
		}
	}
	for name := range existing.Status.Capacity {
		if _, ok := initial.Status.Capacity[name]; isHugePages(name) && !ok {
			delete(existing.Status.Capacity, name)
			delete(existing.Status.Allocatable, name)
			changed = true
		}
	}
	return changed
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// ensureOSLabels puts back the OS and architecture labels; it reports whether it had to.
func ensureOSLabels(node *v1.Node) bool {
	changed := false
	for label, value := range map[string]string{v1.LabelOSStable: goruntime.GOOS, v1.LabelArchStable: goruntime.GOARCH} {
		if node.Labels[label] != value {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[label] = value
			changed = true
		}
	}
	return changed
}

// nodeStatusChanged compares two statuses, ignoring the conditions' heartbeats.
func nodeStatusChanged(old, new *v1.NodeStatus) bool {
	if len(old.Conditions) != len(new.Conditions) {
		return true
	}
	withoutHeartbeats := func(s *v1.NodeStatus) *v1.NodeStatus {
		s = s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		slices.SortStableFunc(s.Conditions, func(a, b v1.NodeCondition) int { return strings.Compare(string(a.Type), string(b.Type)) })
		return s
	}
	return !apiequality.Semantic.DeepEqual(withoutHeartbeats(old), withoutHeartbeats(new))
}

// patchNodeStatus sends the difference between original and node to nodes/status as a
// strategic merge patch (metadata and status; the spec is left alone).
func (c *Controller) patchNodeStatus(ctx context.Context, original, node *v1.Node) (*v1.Node, error) {
	patch, err := nodeStatusPatch(original, node)
	if err != nil {
		return nil, err
	}
	updated, err := c.client.CoreV1().Nodes().Patch(ctx, c.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("failed to patch status %q for node %q: %w", patch, c.cfg.NodeName, err)
	}
	return updated, nil
}

// nodeStatusPatch is the strategic merge patch from original to node. status.addresses is
// declared a merge list keyed by type, which cannot express a changed list of addresses of one
// type; a changed list is therefore sent whole, with a replace directive.
func nodeStatusPatch(original, node *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(original)
	if err != nil {
		return nil, fmt.Errorf("encoding node %q: %w", original.Name, err)
	}
	target := node.DeepCopy()
	target.Spec = original.Spec
	replaceAddresses := len(original.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(original.Status.Addresses, node.Status.Addresses)
	if replaceAddresses {
		target.Status.Addresses = original.Status.Addresses
	}
	newJSON, err := json.Marshal(target)
	if err != nil {
		return nil, fmt.Errorf("encoding node %q: %w", node.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("computing the status patch of node %q: %w", node.Name, err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	var p map[string]interface{}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	status, _ := p["status"].(map[string]interface{})
	if status == nil {
		status = map[string]interface{}{}
		p["status"] = status
	}
	addresses := []interface{}{}
	for _, a := range node.Status.Addresses {
		addresses = append(addresses, map[string]interface{}{"type": string(a.Type), "address": a.Address})
	}
	status["addresses"] = append(addresses, map[string]interface{}{"$patch": "replace"})
	return json.Marshal(p)
}
