package testing

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Builders for the PodTopologySpread and InterPodAffinity tests: spread constraints with every
// field, affinity terms with namespaces and namespace selectors, and controller owners.

// TopologySpreadConstraint adds a spread constraint with all its optional fields; nil leaves a
// field unset (minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore by default).
func (p *PodWrapper) TopologySpreadConstraint(maxSkew int32, topologyKey string, when v1.UnsatisfiableConstraintAction,
	selector *metav1.LabelSelector, minDomains *int32, nodeAffinityPolicy, nodeTaintsPolicy *v1.NodeInclusionPolicy,
	matchLabelKeys []string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: when, LabelSelector: selector,
		MinDomains: minDomains, NodeAffinityPolicy: nodeAffinityPolicy, NodeTaintsPolicy: nodeTaintsPolicy,
		MatchLabelKeys: matchLabelKeys,
	})
	return p
}

// RequiredPodAffinityTerm adds a required pod affinity term as given.
func (p *PodWrapper) RequiredPodAffinityTerm(t v1.PodAffinityTerm) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAffinity == nil {
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{}
	}
	a := p.Spec.Affinity.PodAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return p
}

// RequiredPodAntiAffinityTerm adds a required pod anti-affinity term as given.
func (p *PodWrapper) RequiredPodAntiAffinityTerm(t v1.PodAffinityTerm) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAntiAffinity == nil {
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a := p.Spec.Affinity.PodAntiAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return p
}

// PreferredPodAffinityTerm adds a preferred pod affinity term as given.
func (p *PodWrapper) PreferredPodAffinityTerm(weight int32, t v1.PodAffinityTerm) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAffinity == nil {
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{}
	}
	a := p.Spec.Affinity.PodAffinity
	a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	return p
}

// PreferredPodAntiAffinityTerm adds a preferred pod anti-affinity term as given.
func (p *PodWrapper) PreferredPodAntiAffinityTerm(weight int32, t v1.PodAffinityTerm) *PodWrapper {
	p.ensureAffinity()
	if p.Spec.Affinity.PodAntiAffinity == nil {
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a := p.Spec.Affinity.PodAntiAffinity
	a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	return p
}

// ControllerOwner sets a controller owner reference, e.g. ControllerOwner("apps/v1", "ReplicaSet", "rs").
func (p *PodWrapper) ControllerOwner(apiVersion, kind, name string) *PodWrapper {
	yes := true
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(kind + "-" + name + "-uid"), Controller: &yes,
	})
	return p
}

// AffinityTermWrapper builds a v1.PodAffinityTerm.
type AffinityTermWrapper struct{ v1.PodAffinityTerm }

// MakeAffinityTerm starts a term over topologyKey selecting nothing yet (a nil label selector).
func MakeAffinityTerm(topologyKey string) *AffinityTermWrapper {
	return &AffinityTermWrapper{v1.PodAffinityTerm{TopologyKey: topologyKey}}
}

// Obj returns the term.
func (t *AffinityTermWrapper) Obj() v1.PodAffinityTerm { return t.PodAffinityTerm }

// In requires label key to be one of values.
func (t *AffinityTermWrapper) In(key string, values ...string) *AffinityTermWrapper {
	t.ensureSelector()
	t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values})
	return t
}

// Exists requires label key to be present.
func (t *AffinityTermWrapper) Exists(key string) *AffinityTermWrapper {
	t.ensureSelector()
	t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpExists})
	return t
}

// Namespaces sets the term's namespaces.
func (t *AffinityTermWrapper) Namespaces(ns ...string) *AffinityTermWrapper {
	t.PodAffinityTerm.Namespaces = ns
	return t
}

// NamespaceSelector sets a namespace selector of match labels; an empty map selects all namespaces.
func (t *AffinityTermWrapper) NamespaceSelector(matchLabels map[string]string) *AffinityTermWrapper {
	t.PodAffinityTerm.NamespaceSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return t
}

func (t *AffinityTermWrapper) ensureSelector() {
	if t.LabelSelector == nil {
		t.LabelSelector = &metav1.LabelSelector{}
	}
}

// ExistsSelector is a label selector "key exists".
func ExistsSelector(key string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}
}
