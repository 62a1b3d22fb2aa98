package namespace

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// summary reduces errors to "Type path" pairs, sorted, so tables stay readable.
func fieldErrorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s", string(e.Type), e.Field))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	slices.Sort(want)
	if got := fieldErrorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %v\nwant %v\nfull: %v", got, want, errs)
	}
}

func namespaceForValidation(name string, mutate ...func(*corev1.Namespace)) *corev1.Namespace {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func TestValidateNamespace(t *testing.T) {
	tests := []struct {
		name string
		ns   *corev1.Namespace
		want []string
	}{
		{name: "valid", ns: namespaceForValidation("team-a")},
		{name: "valid with standard spec finalizer", ns: namespaceForValidation("a", func(n *corev1.Namespace) {
			n.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes, "example.com/cleanup"}
		})},
		{name: "name is not a DNS label", ns: namespaceForValidation("team.a"), want: []string{"FieldValueInvalid metadata.name"}},
		{name: "name too long", ns: namespaceForValidation(strings.Repeat("a", 64)), want: []string{"FieldValueInvalid metadata.name"}},
		{name: "no name", ns: namespaceForValidation(""), want: []string{"FieldValueRequired metadata.name"}},
		{name: "namespace on a cluster-scoped object", ns: namespaceForValidation("a", func(n *corev1.Namespace) { n.Namespace = "b" }),
			want: []string{"FieldValueForbidden metadata.namespace"}},
		{name: "non-standard spec finalizer without domain", ns: namespaceForValidation("a", func(n *corev1.Namespace) {
			n.Spec.Finalizers = []corev1.FinalizerName{"cleanup"}
		}), want: []string{"FieldValueInvalid spec.finalizers"}},
		{name: "spec finalizer not a qualified name", ns: namespaceForValidation("a", func(n *corev1.Namespace) {
			n.Spec.Finalizers = []corev1.FinalizerName{"example.com/bad name"}
		}), want: []string{"FieldValueInvalid spec.finalizers"}},
		{name: "non-standard metadata finalizer", ns: namespaceForValidation("a", func(n *corev1.Namespace) {
			n.Finalizers = []string{"kubernetes", "custom"}
		}), want: []string{"FieldValueInvalid metadata.finalizers[1]"}},
		{name: "bad label", ns: namespaceForValidation("a", func(n *corev1.Namespace) { n.Labels = map[string]string{"a b": "c"} }),
			want: []string{"FieldValueInvalid metadata.labels"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateNamespace(tc.ns), tc.want)
		})
	}
}

func TestValidateNamespaceUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *corev1.Namespace
		want     []string
	}{
		{name: "labels change", old: namespaceForValidation("a"), new: namespaceForValidation("a", func(n *corev1.Namespace) { n.Labels = map[string]string{"x": "y"} })},
		{name: "rename", old: namespaceForValidation("a"), new: namespaceForValidation("b"), want: []string{"FieldValueInvalid metadata.name"}},
		{name: "no resourceVersion", old: namespaceForValidation("a"), new: namespaceForValidation("a", func(n *corev1.Namespace) { n.ResourceVersion = "" }),
			want: []string{"FieldValueInvalid metadata.resourceVersion"}},
		{name: "non-standard metadata finalizer", old: namespaceForValidation("a"), new: namespaceForValidation("a", func(n *corev1.Namespace) { n.Finalizers = []string{"x"} }),
			want: []string{"FieldValueInvalid metadata.finalizers[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateNamespaceUpdate(tc.new, tc.old), tc.want)
		})
	}
}

func TestValidateNamespaceStatusUpdate(t *testing.T) {
	now := metav1.NewTime(time.Now())
	deleting := func(n *corev1.Namespace) { n.DeletionTimestamp = &now }
	phase := func(p corev1.NamespacePhase) func(*corev1.Namespace) {
		return func(n *corev1.Namespace) { n.Status.Phase = p }
	}
	tests := []struct {
		name     string
		old, new *corev1.Namespace
		want     []string
	}{
		{name: "active, not deleting", old: namespaceForValidation("a"), new: namespaceForValidation("a", phase(corev1.NamespaceActive))},
		{name: "terminating while deleting", old: namespaceForValidation("a", deleting), new: namespaceForValidation("a", deleting, phase(corev1.NamespaceTerminating))},
		{name: "terminating, not deleting", old: namespaceForValidation("a"), new: namespaceForValidation("a", phase(corev1.NamespaceTerminating)),
			want: []string{"FieldValueInvalid status.Phase"}},
		{name: "active while deleting", old: namespaceForValidation("a", deleting), new: namespaceForValidation("a", deleting, phase(corev1.NamespaceActive)),
			want: []string{"FieldValueInvalid status.Phase"}},
		{name: "empty phase", old: namespaceForValidation("a"), new: namespaceForValidation("a"), want: []string{"FieldValueInvalid status.Phase"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateNamespaceStatusUpdate(tc.new, tc.old), tc.want)
		})
	}
}

func TestValidateNamespaceFinalizeUpdate(t *testing.T) {
	finalizers := func(names ...corev1.FinalizerName) func(*corev1.Namespace) {
		return func(n *corev1.Namespace) { n.Spec.Finalizers = names }
	}
	tests := []struct {
		name     string
		old, new *corev1.Namespace
		want     []string
	}{
		{name: "remove kubernetes", old: namespaceForValidation("a", finalizers(corev1.FinalizerKubernetes)), new: namespaceForValidation("a")},
		{name: "qualified finalizer", old: namespaceForValidation("a"), new: namespaceForValidation("a", finalizers("example.com/x"))},
		{name: "unqualified non-standard", old: namespaceForValidation("a"), new: namespaceForValidation("a", finalizers(corev1.FinalizerKubernetes, "foo")),
			want: []string{"FieldValueInvalid spec.finalizers[1]"}},
		{name: "invalid qualified name", old: namespaceForValidation("a"), new: namespaceForValidation("a", finalizers("example.com/a b")),
			want: []string{"FieldValueInvalid spec.finalizers[0]"}},
		{name: "bad name and not standard", old: namespaceForValidation("a"), new: namespaceForValidation("a", finalizers("-x")),
			want: []string{"FieldValueInvalid spec.finalizers[0]", "FieldValueInvalid spec.finalizers[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateNamespaceFinalizeUpdate(tc.new, tc.old), tc.want)
		})
	}
}

func TestValidateFinalizerNameMessage(t *testing.T) {
	errs := ValidateFinalizerName("foo", field.NewPath("f"))
	if len(errs) != 1 || errs[0].Detail != "name is neither a standard finalizer name nor is it fully qualified" {
		t.Errorf("unexpected errors: %v", errs)
	}
}
