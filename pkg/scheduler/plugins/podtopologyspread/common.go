package podtopologyspread

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/helper"
)

// constraint is a v1.TopologySpreadConstraint with its selector parsed and its optional fields
// resolved to their defaults.
type constraint struct {
	MaxSkew            int32
	TopologyKey        string
	Selector           labels.Selector
	MinDomains         int32
	NodeAffinityPolicy v1.NodeInclusionPolicy
	NodeTaintsPolicy   v1.NodeInclusionPolicy
}

// parseConstraints keeps the constraints with the given whenUnsatisfiable. matchLabelKeys are
// ANDed into the selector with the pod's values for those keys, as kube-scheduler still does in
// 1.37 even though the API server usually merged them already (doing it twice adds the same
// requirement twice, which selects the same pods).
func parseConstraints(cs []v1.TopologySpreadConstraint, podLabels map[string]string, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for i := range cs {
		c := &cs[i]
		if c.WhenUnsatisfiable != action {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		if len(c.MatchLabelKeys) > 0 {
			selector = withMatchLabelKeys(selector, c.MatchLabelKeys, podLabels)
		}
		out = append(out, constraint{
			MaxSkew:            c.MaxSkew,
			TopologyKey:        c.TopologyKey,
			Selector:           selector,
			MinDomains:         ptr.Deref(c.MinDomains, 1),
			NodeAffinityPolicy: ptr.Deref(c.NodeAffinityPolicy, v1.NodeInclusionPolicyHonor),
			NodeTaintsPolicy:   ptr.Deref(c.NodeTaintsPolicy, v1.NodeInclusionPolicyIgnore),
		})
	}
	return out, nil
}

// withMatchLabelKeys adds key=value for each of keys the pod has. A selector without
// requirements to list (labels.Nothing, from a nil labelSelector) stays as it is.
func withMatchLabelKeys(s labels.Selector, keys []string, podLabels map[string]string) labels.Selector {
	set := labels.Set{}
	for _, k := range keys {
		if v, ok := podLabels[k]; ok {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return s
	}
	reqs, selectable := s.Requirements()
	if !selectable {
		return s
	}
	return labels.SelectorFromSet(set).Add(reqs...)
}

// includesNode applies nodeAffinityPolicy and nodeTaintsPolicy: whether the node's domain
// counts for this constraint at all.
func (c *constraint) includesNode(logger klog.Logger, pod *v1.Pod, node *v1.Node, affinity nodeaffinity.RequiredNodeAffinity) bool {
	if c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		// A selector that does not parse matches nothing, as kube-scheduler ignores the error here.
		if ok, _ := affinity.Match(node); !ok {
			return false
		}
	}
	if c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, untolerated := helper.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations, helper.DoNotScheduleTaintsFilterFunc()); untolerated {
			return false
		}
	}
	return true
}

// hasAllTopologyKeys reports whether the node has every constraint's topology key; nodes that
// lack one are in no domain and are skipped by counting.
func hasAllTopologyKeys(nodeLabels map[string]string, cs []constraint) bool {
	for i := range cs {
		if _, ok := nodeLabels[cs[i].TopologyKey]; !ok {
			return false
		}
	}
	return true
}

// countMatching counts the pods in namespace ns that the selector picks, leaving out
// terminating pods (they are on their way out). An empty selector counts nothing, as upstream.
func countMatching(pods []*framework.PodInfo, selector labels.Selector, ns string) int {
	if selector.Empty() {
		return 0
	}
	n := 0
	for _, pi := range pods {
		p := pi.Pod
		if p.Namespace != ns || p.DeletionTimestamp != nil {
			continue
		}
		if selector.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// anySelects reports whether any constraint's selector picks a pod with these labels.
func anySelects(cs []constraint, podLabels map[string]string) bool {
	for i := range cs {
		if cs[i].Selector.Matches(labels.Set(podLabels)) {
			return true
		}
	}
	return false
}

// until runs do(i) for i in [0, n) on the handle's parallelizer, or in order without one.
func until(ctx context.Context, p framework.Parallelizer, n int, do func(int)) {
	if p == nil {
		for i := 0; i < n; i++ {
			do(i)
		}
		return
	}
	p.Until(ctx, n, do, Name)
}

// ownerListers are the listers the default selector reads; any of them may be nil when the
// API server does not serve that resource.
type ownerListers struct {
	services     corelisters.ServiceLister
	rcs          corelisters.ReplicationControllerLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
}

var (
	rcKind = v1.SchemeGroupVersion.WithKind("ReplicationController")
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ssKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// defaultSelector is the selector that default constraints use for a pod: the pods of the
// services that select it and of its controlling ReplicationController, ReplicaSet or
// StatefulSet. It is empty (and default constraints do not apply) when none is known.
func (o *ownerListers) defaultSelector(pod *v1.Pod) labels.Selector {
	set := labels.Set{}
	if o.services != nil {
		// Services, RCs, RSs and SSs that select the same pod cannot disagree on a label, so
		// merging is safe.
		if svcs, err := o.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
			for _, svc := range svcs {
				// A nil service selector selects nothing, not everything.
				if svc.Spec.Selector != nil && labels.Set(svc.Spec.Selector).AsSelectorPreValidated().Matches(labels.Set(pod.Labels)) {
					set = labels.Merge(set, svc.Spec.Selector)
				}
			}
		}
	}
	selector := set.AsSelector()

	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return selector
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return selector
	}
	var ownerSelector *metav1.LabelSelector
	switch gv.WithKind(owner.Kind) {
	case rcKind:
		if o.rcs != nil {
			if rc, err := o.rcs.ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
				return labels.Merge(set, rc.Spec.Selector).AsSelector()
			}
		}
	case rsKind:
		if o.replicaSets != nil {
			if rs, err := o.replicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
				ownerSelector = rs.Spec.Selector
			}
		}
	case ssKind:
		if o.statefulSets != nil {
			if ss, err := o.statefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
				ownerSelector = ss.Spec.Selector
			}
		}
	}
	if ownerSelector != nil {
		if other, err := metav1.LabelSelectorAsSelector(ownerSelector); err == nil {
			if reqs, ok := other.Requirements(); ok {
				selector = selector.Add(reqs...)
			}
		}
	}
	return selector
}
