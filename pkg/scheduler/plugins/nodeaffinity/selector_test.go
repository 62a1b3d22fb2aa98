package nodeaffinity

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The matchers in selector.go must agree with component-helpers' nodeaffinity package, which
// they replace in the hot path: same matches, same scores, same errors.

var selectorTerms = []v1.NodeSelectorTerm{
	exprs(req("foo", v1.NodeSelectorOpIn, "bar")),
	exprs(req("foo", v1.NodeSelectorOpNotIn, "bar", "baz")),
	exprs(req("foo", v1.NodeSelectorOpExists), req("zone", v1.NodeSelectorOpDoesNotExist)),
	exprs(req("n", v1.NodeSelectorOpGt, "3")),
	exprs(req("n", v1.NodeSelectorOpLt, "3")),
	exprs(req("n", v1.NodeSelectorOpGt, "x")),       // invalid value
	exprs(req("bad key!", v1.NodeSelectorOpExists)), // invalid key
	exprs(req("foo", "Matches", "bar")),             // invalid operator
	exprs(req("foo", v1.NodeSelectorOpIn)),          // no values
	fields(nameIn("node1")),                         //
	fields(req(metav1.ObjectNameField, v1.NodeSelectorOpNotIn, "node1")),
	fields(nameIn("node1", "node2")),                             // too many values
	fields(req(metav1.ObjectNameField, v1.NodeSelectorOpExists)), // unsupported
	fields(req("metadata.uid", v1.NodeSelectorOpIn, "")),         // unknown field, empty value
	fields(req("metadata.uid", v1.NodeSelectorOpNotIn, "u")),
	{MatchExpressions: []v1.NodeSelectorRequirement{req("foo", v1.NodeSelectorOpIn, "bar")}, MatchFields: []v1.NodeSelectorRequirement{nameIn("node2")}},
	{},
}

var selectorNodes = []*v1.Node{
	{ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{"foo": "bar"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "node2", Labels: map[string]string{"foo": "bar", "n": "5"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "node3", Labels: map[string]string{"foo": "baz", "zone": "a", "n": "1"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "node4"}},
	{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"foo": "qux"}}}, // no name
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestRequiredAffinityAgreesWithComponentHelpers(t *testing.T) {
	var pods []*v1.Pod
	for i := range selectorTerms {
		pods = append(pods, podRequiring(selectorTerms[i]))
		for j := i + 1; j < len(selectorTerms); j++ {
			pods = append(pods, podRequiring(selectorTerms[i], selectorTerms[j]))
		}
	}
	pods = append(pods, podRequiring(), withNodeSelector(podRequiring(selectorTerms[0]), map[string]string{"zone": "a"}),
		withNodeSelector(&v1.Pod{}, map[string]string{"foo": "bar"}), &v1.Pod{})
	for i, pod := range pods {
		ours := newRequiredAffinity(pod)
		theirs := nodeaffinity.GetRequiredNodeAffinity(pod)
		for _, node := range selectorNodes {
			got, gotErr := ours.match(node)
			want, wantErr := theirs.Match(node)
			if got != want || errString(gotErr) != errString(wantErr) {
				t.Errorf("pod %d, node %q: got (%v, %v), want (%v, %v)", i, node.Name, got, gotErr, want, wantErr)
			}
		}
	}
}

func TestNodeSelectorErrorsAgreeWithComponentHelpers(t *testing.T) {
	path := field.NewPath("addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
	for i := range selectorTerms {
		ns := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{selectorTerms[i], selectorTerms[(i+5)%len(selectorTerms)]}}
		_, wantErr := nodeaffinity.NewNodeSelector(ns, field.WithPath(path))
		if got := newNodeSelector(ns, path).err(); errString(got) != errString(wantErr) {
			t.Errorf("terms %d: got %v, want %v", i, got, wantErr)
		}
	}
}

func TestPreferredTermsAgreeWithComponentHelpers(t *testing.T) {
	for i := range selectorTerms {
		for j := range selectorTerms {
			terms := []v1.PreferredSchedulingTerm{preferred(int32(i+1), selectorTerms[i]), preferred(int32(10*j), selectorTerms[j])}
			t.Run(fmt.Sprintf("%d,%d", i, j), func(t *testing.T) {
				ours, gotErr := newPreferredTerms(terms, nil)
				theirs, wantErr := nodeaffinity.NewPreferredSchedulingTerms(terms)
				if errString(gotErr) != errString(wantErr) {
					t.Fatalf("error %v, want %v", gotErr, wantErr)
				}
				if wantErr != nil {
					return
				}
				for _, node := range selectorNodes {
					if got, want := ours.score(node), theirs.Score(node); got != want {
						t.Errorf("node %q: score %d, want %d", node.Name, got, want)
					}
				}
			})
		}
	}
}
