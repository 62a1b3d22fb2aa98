package nodeaffinity

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file parses node selector terms once per pod into matchers that Filter and Score run
// for every node without allocating. They match as k8s.io/component-helpers'
// scheduling/corev1/nodeaffinity does (whose Match builds a fields.Set per node), and report
// the same parse errors.

// term is a parsed v1.NodeSelectorTerm: its requirements are ANDed.
type term struct {
	// labels is nil when the term has no matchExpressions.
	labels labels.Selector
	// fields are the matchFields requirements.
	fields []fieldRequirement
	// errs makes the term match nothing.
	errs []error
}

// fieldRequirement is "key In (value)" or "key NotIn (value)" on the node's fields, of which
// a node has one: metadata.name.
type fieldRequirement struct {
	key, value string
	in         bool
}

var (
	validSelectorOperators      = []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt}
	validFieldSelectorOperators = []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn}
	labelOperators              = map[v1.NodeSelectorOperator]selection.Operator{
		v1.NodeSelectorOpIn:           selection.In,
		v1.NodeSelectorOpNotIn:        selection.NotIn,
		v1.NodeSelectorOpExists:       selection.Exists,
		v1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
		v1.NodeSelectorOpGt:           selection.GreaterThan,
		v1.NodeSelectorOpLt:           selection.LessThan,
	}
)

func isEmptyTerm(t *v1.NodeSelectorTerm) bool {
	return len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0
}

// newTerm parses a term; path names it in errors.
func newTerm(t *v1.NodeSelectorTerm, path *field.Path) term {
	var out term
	if len(t.MatchExpressions) > 0 {
		p := path.Child("matchExpressions")
		sel := labels.NewSelector()
		for i, expr := range t.MatchExpressions {
			op, ok := labelOperators[expr.Operator]
			if !ok {
				out.errs = append(out.errs, field.NotSupported(p.Index(i).Child("operator"), expr.Operator, validSelectorOperators))
				continue
			}
			r, err := labels.NewRequirement(expr.Key, op, expr.Values, field.WithPath(p.Index(i)))
			if err != nil {
				out.errs = append(out.errs, err)
				continue
			}
			sel = sel.Add(*r)
		}
		out.labels = sel
	}
	if len(t.MatchFields) > 0 {
		p := path.Child("matchFields")
		for i, req := range t.MatchFields {
			switch {
			case req.Operator != v1.NodeSelectorOpIn && req.Operator != v1.NodeSelectorOpNotIn:
				out.errs = append(out.errs, field.NotSupported(p.Index(i).Child("operator"), req.Operator, validFieldSelectorOperators))
			case len(req.Values) != 1:
				out.errs = append(out.errs, field.Invalid(p.Index(i).Child("values"), req.Values, "must have one element"))
			default:
				out.fields = append(out.fields, fieldRequirement{key: req.Key, value: req.Values[0], in: req.Operator == v1.NodeSelectorOpIn})
			}
		}
	}
	return out
}

// matches reports whether the node meets every requirement. Field requirements are ignored for
// a node without a name, as component-helpers does.
func (t *term) matches(node *v1.Node) bool {
	if t.errs != nil {
		return false
	}
	if t.labels != nil && !t.labels.Matches(labels.Set(node.Labels)) {
		return false
	}
	if node.Name == "" {
		return true
	}
	for _, f := range t.fields {
		var v string
		if f.key == metav1.ObjectNameField {
			v = node.Name
		}
		if (v == f.value) != f.in {
			return false
		}
	}
	return true
}

// nodeSelector is a parsed v1.NodeSelector: its terms are ORed; empty terms are dropped, and a
// selector without terms matches nothing.
type nodeSelector []term

func newNodeSelector(ns *v1.NodeSelector, path *field.Path) nodeSelector {
	out := make(nodeSelector, 0, len(ns.NodeSelectorTerms))
	p := path.Child("nodeSelectorTerms")
	for i := range ns.NodeSelectorTerms {
		if isEmptyTerm(&ns.NodeSelectorTerms[i]) {
			continue
		}
		out = append(out, newTerm(&ns.NodeSelectorTerms[i], p.Index(i)))
	}
	return out
}

// err returns the parse errors of all terms, or nil.
func (s nodeSelector) err() error {
	var errs []error
	for i := range s {
		errs = append(errs, s[i].errs...)
	}
	return utilerrors.Flatten(utilerrors.NewAggregate(errs))
}

// match reports whether a term matches. Terms that did not parse never match; their errors
// are returned only when no term matched.
func (s nodeSelector) match(node *v1.Node) (bool, error) {
	failed := false
	for i := range s {
		if s[i].errs != nil {
			failed = true
			continue
		}
		if s[i].matches(node) {
			return true, nil
		}
	}
	if failed {
		return false, s.err()
	}
	return false, nil
}

// requiredAffinity is a pod's spec.nodeSelector and required node affinity, both of which a
// node must meet.
type requiredAffinity struct {
	// labelSelector is nil when the pod has no nodeSelector.
	labelSelector labels.Selector
	// affinity is nil when the pod has no required node affinity.
	affinity *nodeSelector
}

func newRequiredAffinity(pod *v1.Pod) requiredAffinity {
	var r requiredAffinity
	if len(pod.Spec.NodeSelector) > 0 {
		r.labelSelector = labels.SelectorFromSet(pod.Spec.NodeSelector)
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		ns := newNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, nil)
		r.affinity = &ns
	}
	return r
}

// match reports whether the node meets both; the error is the affinity's parse errors when
// they may have cost a match.
func (r *requiredAffinity) match(node *v1.Node) (bool, error) {
	if r.labelSelector != nil && !r.labelSelector.Matches(labels.Set(node.Labels)) {
		return false, nil
	}
	if r.affinity != nil {
		return r.affinity.match(node)
	}
	return true, nil
}

// preferredTerm is a parsed v1.PreferredSchedulingTerm.
type preferredTerm struct {
	term
	weight int64
}

// preferredTerms are parsed preferred scheduling terms. nil means there were none at all, which
// lets PreScore skip; an empty, non-nil list means all had weight 0 or were empty.
type preferredTerms []preferredTerm

// newPreferredTerms parses terms, dropping those of weight 0 and empty ones; it fails on any
// parse error.
func newPreferredTerms(terms []v1.PreferredSchedulingTerm, path *field.Path) (preferredTerms, error) {
	out := make(preferredTerms, 0, len(terms))
	var errs []error
	for i := range terms {
		if terms[i].Weight == 0 || isEmptyTerm(&terms[i].Preference) {
			continue
		}
		t := newTerm(&terms[i].Preference, path.Index(i))
		if t.errs != nil {
			errs = append(errs, t.errs...)
			continue
		}
		out = append(out, preferredTerm{term: t, weight: int64(terms[i].Weight)})
	}
	if len(errs) > 0 {
		return nil, utilerrors.Flatten(utilerrors.NewAggregate(errs))
	}
	return out, nil
}

// score sums the weights of the terms the node matches.
func (p preferredTerms) score(node *v1.Node) int64 {
	var sum int64
	for i := range p {
		if p[i].matches(node) {
			sum += p[i].weight
		}
	}
	return sum
}
