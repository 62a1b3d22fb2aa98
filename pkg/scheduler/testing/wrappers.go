// Package testing builds the pods and nodes that the scheduler's tests use, as
// MakePod().Name("p").Req(map[...]...).Obj(), so that a table of cases reads as a scenario.
package testing

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWrapper builds a pod.
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod in namespace "default" with one container "c".
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec: v1.PodSpec{
			Containers:    []v1.Container{{Name: "c", Image: "img"}},
			SchedulerName: v1.DefaultSchedulerName,
		},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Name sets the name, and a UID derived from it unless one is set.
func (p *PodWrapper) Name(s string) *PodWrapper {
	p.ObjectMeta.Name = s
	if p.ObjectMeta.UID == "" {
		p.ObjectMeta.UID = types.UID(s + "-uid")
	}
	return p
}

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(s string) *PodWrapper { p.ObjectMeta.Namespace = s; return p }

// UID sets the UID.
func (p *PodWrapper) UID(s string) *PodWrapper { p.ObjectMeta.UID = types.UID(s); return p }

// Node binds the pod to a node.
func (p *PodWrapper) Node(s string) *PodWrapper { p.Spec.NodeName = s; return p }

// NominatedNode sets status.nominatedNodeName.
func (p *PodWrapper) NominatedNode(s string) *PodWrapper { p.Status.NominatedNodeName = s; return p }

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(s string) *PodWrapper { p.Spec.SchedulerName = s; return p }

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Spec.Priority = &v; return p }

// PreemptionPolicy sets spec.preemptionPolicy.
func (p *PodWrapper) PreemptionPolicy(policy v1.PreemptionPolicy) *PodWrapper {
	p.Spec.PreemptionPolicy = &policy
	return p
}

// CreationTimestamp sets metadata.creationTimestamp.
func (p *PodWrapper) CreationTimestamp(t metav1.Time) *PodWrapper {
	p.ObjectMeta.CreationTimestamp = t
	return p
}

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.ObjectMeta.Labels == nil {
		p.ObjectMeta.Labels = map[string]string{}
	}
	p.ObjectMeta.Labels[k] = v
	return p
}

// Labels adds labels.
func (p *PodWrapper) Labels(labels map[string]string) *PodWrapper {
	for k, v := range labels {
		p.Label(k, v)
	}
	return p
}

// Containers replaces the containers with ones of these images.
func (p *PodWrapper) Containers(images ...string) *PodWrapper {
	p.Spec.Containers = nil
	for i, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Image: img})
	}
	return p
}

// Req sets the requests of the first container, e.g. Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
func (p *PodWrapper) Req(reqs map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Containers[0].Resources.Requests = ResourceList(reqs)
	return p
}

// Lim sets the limits of the first container.
func (p *PodWrapper) Lim(lims map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Containers[0].Resources.Limits = ResourceList(lims)
	return p
}

// InitReq adds an init container with these requests.
func (p *PodWrapper) InitReq(reqs map[v1.ResourceName]string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
		Name: "init" + string(rune('0'+len(p.Spec.InitContainers))), Image: "img",
		Resources: v1.ResourceRequirements{Requests: ResourceList(reqs)},
	})
	return p
}

// Overhead sets spec.overhead.
func (p *PodWrapper) Overhead(o map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Overhead = ResourceList(o)
	return p
}

// HostPort adds a container port bound to a host port.
func (p *PodWrapper) HostPort(port int32, protocol v1.Protocol, hostIP string) *PodWrapper {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{
		ContainerPort: port, HostPort: port, Protocol: protocol, HostIP: hostIP,
	})
	return p
}

// NodeSelector sets spec.nodeSelector.
func (p *PodWrapper) NodeSelector(m map[string]string) *PodWrapper { p.Spec.NodeSelector = m; return p }

// NodeAffinityIn adds a required node affinity term "key In (values)".
func (p *PodWrapper) NodeAffinityIn(key string, values ...string) *PodWrapper {
	p.ensureNodeAffinity()
	req := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil {
		req = &v1.NodeSelector{}
		p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = req
	}
	req.NodeSelectorTerms = append(req.NodeSelectorTerms, v1.NodeSelectorTerm{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}},
	})
	return p
}

// PreferredNodeAffinityIn adds a preferred node affinity term "key In (values)" with a weight.
func (p *PodWrapper) PreferredNodeAffinityIn(weight int32, key string, values ...string) *PodWrapper {
	p.ensureNodeAffinity()
	p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
		p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, v1.PreferredSchedulingTerm{
			Weight:     weight,
			Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}},
		})
	return p
}

func (p *PodWrapper) ensureNodeAffinity() {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(t v1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// SchedulingGates sets spec.schedulingGates.
func (p *PodWrapper) SchedulingGates(names ...string) *PodWrapper {
	for _, n := range names {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: n})
	}
	return p
}

// PodAffinity adds a required pod affinity term "labelKey In (values)" over topologyKey.
func (p *PodWrapper) PodAffinity(topologyKey, labelKey string, values ...string) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAffinity == nil {
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{}
	}
	p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, labelKey, values))
	return p
}

// PodAntiAffinity adds a required pod anti-affinity term "labelKey In (values)" over topologyKey.
func (p *PodWrapper) PodAntiAffinity(topologyKey, labelKey string, values ...string) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAntiAffinity == nil {
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, labelKey, values))
	return p
}

// PreferredPodAffinity adds a preferred pod affinity term.
func (p *PodWrapper) PreferredPodAffinity(weight int32, topologyKey, labelKey string, values ...string) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAffinity == nil {
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{}
	}
	p.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
		p.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, labelKey, values)})
	return p
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, topologyKey, labelKey string, values ...string) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAntiAffinity == nil {
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
		p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, labelKey, values)})
	return p
}

func (p *PodWrapper) ensureAffinity() {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
}

func term(topologyKey, labelKey string, values []string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		TopologyKey: topologyKey,
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: labelKey, Operator: metav1.LabelSelectorOpIn, Values: values},
		}},
	}
}

// SpreadConstraint adds a topology spread constraint selecting pods with labelKey=labelValue.
func (p *PodWrapper) SpreadConstraint(maxSkew int32, topologyKey string, when v1.UnsatisfiableConstraintAction, labelKey, labelValue string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelKey: labelValue}},
	})
	return p
}

// Terminating marks the pod as being deleted.
func (p *PodWrapper) Terminating() *PodWrapper {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// Phase sets status.phase.
func (p *PodWrapper) Phase(phase v1.PodPhase) *PodWrapper { p.Status.Phase = phase; return p }

// NodeWrapper builds a node.
type NodeWrapper struct{ v1.Node }

// MakeNode starts a node with the label kubernetes.io/hostname and no capacity.
func MakeNode() *NodeWrapper {
	return &NodeWrapper{v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}}
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Name sets the name and the hostname label.
func (n *NodeWrapper) Name(s string) *NodeWrapper {
	n.ObjectMeta.Name = s
	n.ObjectMeta.UID = types.UID(s + "-uid")
	n.ObjectMeta.Labels[v1.LabelHostname] = s
	return n
}

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper { n.ObjectMeta.Labels[k] = v; return n }

// Capacity sets capacity and allocatable, e.g. Capacity(map[v1.ResourceName]string{"cpu": "4", "pods": "110"}).
func (n *NodeWrapper) Capacity(c map[v1.ResourceName]string) *NodeWrapper {
	n.Status.Capacity = ResourceList(c)
	n.Status.Allocatable = ResourceList(c)
	return n
}

// Taints sets the taints.
func (n *NodeWrapper) Taints(taints ...v1.Taint) *NodeWrapper { n.Spec.Taints = taints; return n }

// Unschedulable sets spec.unschedulable.
func (n *NodeWrapper) Unschedulable(u bool) *NodeWrapper { n.Spec.Unschedulable = u; return n }

// Images sets status.images: name → size in bytes.
func (n *NodeWrapper) Images(images map[string]int64) *NodeWrapper {
	for name, size := range images {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{name}, SizeBytes: size})
	}
	return n
}

// ResourceList parses a map of quantities.
func ResourceList(m map[v1.ResourceName]string) v1.ResourceList {
	if m == nil {
		return nil
	}
	rl := v1.ResourceList{}
	for k, v := range m {
		rl[k] = resource.MustParse(v)
	}
	return rl
}
