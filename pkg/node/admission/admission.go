// Package admission is the node agent's canAdmitPod, called from seed 003's
// HandlePodAdditions before a new pod is dispatched to the pod workers: does the pod fit on
// this node next to the pods already admitted? It asks the scheduler's questions again, on
// the node, because the scheduler's picture may be stale and static pods never met a
// scheduler: the node's OS, the node name, the node selector and required node affinity,
// host ports, the node's allocatable resources (pods, cpu, memory, ephemeral-storage,
// extended resources) and NoExecute taints. A pod that fails is rejected with the kubelet's
// reasons and messages (OutOfcpu, NodeAffinity, ...), which end up in its status.
package admission

import (
	"fmt"
	"runtime"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/nodename"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/nodeports"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/noderesources"
)

// The reasons a pod is rejected with, as the kubelet words them. A predicate's reason is its
// name (NodeAffinity, NodeName, NodePorts, TaintToleration); an insufficient resource's is
// "OutOf" and the resource's name.
const (
	PodOSSelectorNodeLabelDoesNotMatch   = "PodOSSelectorNodeLabelDoesNotMatch"
	PodOSNotSupported                    = "PodOSNotSupported"
	InvalidNodeInfo                      = "InvalidNodeInfo"
	SupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
	UnexpectedAdmissionError             = "UnexpectedAdmissionError"

	InsufficientResourcePrefix = "OutOf"
	OutOfCPU                   = "OutOfcpu"
	OutOfMemory                = "OutOfmemory"
	OutOfEphemeralStorage      = "OutOfephemeral-storage"
	OutOfPods                  = "OutOfpods"

	PredicateNodeAffinity    = "NodeAffinity"
	PredicateNodeName        = "NodeName"
	PredicateNodePorts       = "NodePorts"
	PredicateTaintToleration = "TaintToleration"
)

// The predicates' descriptions, as kube-scheduler's plugins word their reasons.
const (
	descNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	descNodeName     = "node(s) didn't match the requested node name"
	descNodePorts    = "node(s) didn't have free ports for the requested pod ports"
	descTaint        = "node(s) had taints that the pod didn't tolerate"
)

// PodAdmitAttributes is the pod to admit and the pods already admitted on the node.
type PodAdmitAttributes struct {
	Pod       *v1.Pod
	OtherPods []*v1.Pod
}

// PodAdmitResult says whether the pod is admitted, and if not why: Reason is a CamelCase
// word, Message a sentence, as they go into the pod's status.
type PodAdmitResult struct {
	Admit   bool
	Reason  string
	Message string
}

// PodAdmitHandler decides whether a pod may run on the node.
type PodAdmitHandler interface {
	Admit(attrs *PodAdmitAttributes) PodAdmitResult
}

// InsufficientResource is a resource the node has too little of for the pod.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	Requested    int64
	Used         int64
	Capacity     int64
}

func (r *InsufficientResource) Error() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		r.ResourceName, r.Requested, r.Used, r.Capacity)
}

// Shortfall is how much of the resource must be freed for the pod to fit.
func (r *InsufficientResource) Shortfall() int64 {
	return r.Requested - (r.Capacity - r.Used)
}

// failure is one reason a pod does not fit: a failed predicate or an insufficient resource.
type failure struct {
	predicate, desc string
	resource        *InsufficientResource
}

func (f failure) result() PodAdmitResult {
	if r := f.resource; r != nil {
		reason := InsufficientResourcePrefix + string(r.ResourceName)
		switch r.ResourceName {
		case v1.ResourceCPU:
			reason = OutOfCPU
		case v1.ResourceMemory:
			reason = OutOfMemory
		case v1.ResourceEphemeralStorage:
			reason = OutOfEphemeralStorage
		case v1.ResourcePods:
			reason = OutOfPods
		}
		return PodAdmitResult{Reason: reason, Message: r.Error()}
	}
	return PodAdmitResult{Reason: f.predicate, Message: fmt.Sprintf("Predicate %s failed: %s", f.predicate, f.desc)}
}

// PreemptFunc frees resources on the node for a critical pod that lacks them, by evicting
// less important pods; an error means it could not.
type PreemptFunc func(pod *v1.Pod, lacking []InsufficientResource) error

// NewPredicateAdmitHandler returns the kubelet's predicate admission. getNode returns the
// node agent's Node. Critical pods (static and mirror pods, and pods of priority
// system-cluster-critical or higher) are never rejected for lack of resources: the kubelet
// evicts other pods to make room for them; this handler, having no evictor, admits them all
// the same (see NewPredicateAdmitHandlerWithPreemption).
func NewPredicateAdmitHandler(getNode func() (*v1.Node, error)) PodAdmitHandler {
	return &predicateAdmitHandler{getNode: getNode}
}

// NewPredicateAdmitHandlerWithPreemption is NewPredicateAdmitHandler with preempt called
// for a critical pod that fails only for lack of resources; the pod is admitted if preempt
// succeeds.
func NewPredicateAdmitHandlerWithPreemption(getNode func() (*v1.Node, error), preempt PreemptFunc) PodAdmitHandler {
	return &predicateAdmitHandler{getNode: getNode, preempt: preempt}
}

type predicateAdmitHandler struct {
	getNode func() (*v1.Node, error)
	preempt PreemptFunc // nil: critical pods are admitted without preemption
}

var _ PodAdmitHandler = &predicateAdmitHandler{}

// Admit runs the checks in the kubelet's order: the node's OS, supplemental groups, then
// the general predicates (resources, node affinity, node name, host ports, NoExecute
// taints); the first failure is the result.
func (h *predicateAdmitHandler) Admit(attrs *PodAdmitAttributes) PodAdmitResult {
	logger := klog.Background()
	pod := attrs.Pod
	node, err := h.getNode()
	if err != nil {
		logger.Error(err, "Cannot get Node info")
		return PodAdmitResult{Reason: InvalidNodeInfo, Message: "Kubelet cannot get node info."}
	}
	if osLabelMismatch(pod) {
		return PodAdmitResult{Reason: PodOSSelectorNodeLabelDoesNotMatch,
			Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return PodAdmitResult{Reason: PodOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	if strictSupplementalGroupsUnsupported(pod, node) {
		return PodAdmitResult{Reason: SupplementalGroupsPolicyNotSupported,
			Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}
	}

	nodeInfo := framework.NewNodeInfo(attrs.OtherPods...)
	nodeInfo.SetNode(node)
	failures := generalFilter(logger, withoutMissingExtendedResources(pod, nodeInfo), nodeInfo)
	if len(failures) > 0 && types.IsCriticalPod(pod) {
		if failures, err = h.handleCriticalPod(pod, failures); err != nil {
			logger.Info("Failed to admit pod, unexpected error while attempting to recover from admission failure", "pod", klog.KObj(pod), "err", err)
			return PodAdmitResult{Reason: UnexpectedAdmissionError,
				Message: fmt.Sprintf("Unexpected error while attempting to recover from admission failure: %v", err)}
		}
	}
	if len(failures) == 0 {
		return PodAdmitResult{Admit: true}
	}
	result := failures[0].result()
	logger.V(2).Info("Predicate failed on Pod", "pod", klog.KObj(pod), "err", result.Message)
	return result
}

// handleCriticalPod drops the resource failures of a critical pod, preempting other pods for
// them when the handler can; other failures stand.
func (h *predicateAdmitHandler) handleCriticalPod(pod *v1.Pod, failures []failure) ([]failure, error) {
	var others []failure
	var lacking []InsufficientResource
	for _, f := range failures {
		if f.resource != nil {
			lacking = append(lacking, *f.resource)
		} else {
			others = append(others, f)
		}
	}
	if len(others) > 0 || h.preempt == nil {
		return others, nil
	}
	return nil, h.preempt(pod, lacking)
}

// generalFilter is the scheduler's admission check on one node, in kube-scheduler's order
// (resources, node affinity, node name, host ports), and, for pods that are not static,
// NoExecute taints the pod does not tolerate.
func generalFilter(logger klog.Logger, pod *v1.Pod, nodeInfo *framework.NodeInfo) []failure {
	var out []failure
	for _, r := range noderesources.Fits(pod, nodeInfo) {
		out = append(out, failure{resource: &InsufficientResource{
			ResourceName: r.ResourceName, Requested: r.Requested, Used: r.Used, Capacity: r.Capacity,
		}})
	}
	node := nodeInfo.Node()
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		out = append(out, failure{predicate: PredicateNodeAffinity, desc: descNodeAffinity})
	}
	if !nodename.Fits(pod, nodeInfo) {
		out = append(out, failure{predicate: PredicateNodeName, desc: descNodeName})
	}
	if !nodeports.Fits(pod, nodeInfo) {
		out = append(out, failure{predicate: PredicateNodePorts, desc: descNodePorts})
	}
	if !types.IsStaticPod(pod) {
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations,
			func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }, false)
		if untolerated {
			out = append(out, failure{predicate: PredicateTaintToleration, desc: descTaint})
		}
	}
	return out
}

// osLabelMismatch: the pod's kubernetes.io/os label names another OS than the node's, which
// is this binary's, whatever the node's own label says.
func osLabelMismatch(pod *v1.Pod) bool {
	want, ok := pod.Labels[v1.LabelOSStable]
	if !ok {
		return false
	}
	return want != runtime.GOOS
}

// strictSupplementalGroupsUnsupported: the pod asks for the Strict supplemental groups
// policy, which the node's runtime does not report it supports.
func strictSupplementalGroupsUnsupported(pod *v1.Pod, node *v1.Node) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return false
	}
	f := node.Status.Features
	return f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy
}

// withoutMissingExtendedResources returns a copy of the pod without its containers' requests
// of extended resources the node does not have at all: the kubelet leaves those to the
// device plugins' own admission rather than rejecting the pod for them.
func withoutMissingExtendedResources(pod *v1.Pod, nodeInfo *framework.NodeInfo) *v1.Pod {
	missing := func(name v1.ResourceName) bool {
		if !isExtendedResourceName(name) {
			return false
		}
		_, ok := nodeInfo.Allocatable.ScalarResources[name]
		return !ok
	}
	needsCopy := false
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for name := range c.Resources.Requests {
				needsCopy = needsCopy || missing(name)
			}
		}
	}
	if !needsCopy {
		return pod
	}
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if missing(name) {
					delete(cs[i].Resources.Requests, name)
				}
			}
		}
	}
	return out
}

// isExtendedResourceName: a resource outside the kubernetes.io namespace, such as
// example.com/gpu, whose quota name (requests.<name>) is a valid qualified name.
func isExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}
