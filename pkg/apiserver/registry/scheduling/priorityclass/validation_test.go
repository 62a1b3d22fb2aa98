package priorityclass

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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

func classForValidation(name string, value int32, mutate ...func(*schedulingv1.PriorityClass)) *schedulingv1.PriorityClass {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Value: value}
	SetDefaults(pc)
	for _, m := range mutate {
		m(pc)
	}
	return pc
}

func withPolicy(p corev1.PreemptionPolicy) func(*schedulingv1.PriorityClass) {
	return func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = &p }
}

func TestValidatePriorityClass(t *testing.T) {
	globalDefault := func(pc *schedulingv1.PriorityClass) { pc.GlobalDefault = true }
	tests := []struct {
		name string
		pc   *schedulingv1.PriorityClass
		want []string
	}{
		{name: "user class", pc: classForValidation("high", 1000)},
		{name: "negative value", pc: classForValidation("low", -10)},
		{name: "at the user limit", pc: classForValidation("top", HighestUserDefinablePriority)},
		{name: "over the user limit", pc: classForValidation("top", HighestUserDefinablePriority+1),
			want: []string{"FieldValueForbidden value"}},
		{name: "system node critical", pc: classForValidation(SystemNodeCritical, 2000001000)},
		{name: "system cluster critical", pc: classForValidation(SystemClusterCritical, 2000000000)},
		{name: "system class, wrong value", pc: classForValidation(SystemClusterCritical, 5),
			want: []string{"FieldValueForbidden metadata.name"}},
		{name: "system class, global default", pc: classForValidation(SystemNodeCritical, 2000001000, globalDefault),
			want: []string{"FieldValueForbidden metadata.name"}},
		{name: "unknown system class", pc: classForValidation("system-mine", 10),
			want: []string{"FieldValueForbidden metadata.name"}},
		{name: "bad name", pc: classForValidation("High_Priority", 10), want: []string{"FieldValueInvalid metadata.name"}},
		{name: "namespace set", pc: classForValidation("x", 1, func(pc *schedulingv1.PriorityClass) { pc.Namespace = "default" }),
			want: []string{"FieldValueForbidden metadata.namespace"}},
		{name: "Never", pc: classForValidation("batch", 1, withPolicy(corev1.PreemptNever))},
		{name: "empty policy", pc: classForValidation("batch", 1, withPolicy("")), want: []string{"FieldValueRequired preemptionPolicy"}},
		{name: "unknown policy", pc: classForValidation("batch", 1, withPolicy("Sometimes")),
			want: []string{"FieldValueNotSupported preemptionPolicy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidatePriorityClass(tc.pc), tc.want)
		})
	}
}

func TestSystemClassMessages(t *testing.T) {
	tests := []struct {
		pc   *schedulingv1.PriorityClass
		want string
	}{
		{classForValidation(SystemClusterCritical, 5), "value of system-cluster-critical PriorityClass must be 2000000000"},
		{classForValidation("system-mine", 5), "system-mine is not a known system priority class"},
	}
	for _, tc := range tests {
		errs := ValidatePriorityClass(tc.pc)
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Detail, "priority class names with 'system-' prefix are reserved for system use only. error: ") ||
			!strings.HasSuffix(errs[0].Detail, tc.want) {
			t.Errorf("%s: unexpected errors: %v", tc.pc.Name, errs)
		}
	}
}

func TestSystemPriorityClasses(t *testing.T) {
	classes := SystemPriorityClasses()
	if len(classes) != 2 {
		t.Fatalf("got %d classes, want 2", len(classes))
	}
	want := map[string]int32{SystemNodeCritical: 2000001000, SystemClusterCritical: 2000000000}
	for _, pc := range classes {
		if want[pc.Name] != pc.Value || pc.Description == "" || pc.GlobalDefault {
			t.Errorf("unexpected class %+v", pc)
		}
		if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
			t.Errorf("%s: preemptionPolicy = %v", pc.Name, pc.PreemptionPolicy)
		}
		if errs := ValidatePriorityClass(pc); len(errs) != 0 {
			t.Errorf("%s does not validate: %v", pc.Name, errs)
		}
	}
	// Callers get their own copies.
	classes[0].Value = 1
	*classes[0].PreemptionPolicy = corev1.PreemptNever
	again := SystemPriorityClasses()
	if again[0].Value != 2000001000 || *again[0].PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("SystemPriorityClasses returned shared objects")
	}
}

func TestValidatePriorityClassUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *schedulingv1.PriorityClass
		want     []string
	}{
		{name: "description change", old: classForValidation("high", 10), new: classForValidation("high", 10, func(pc *schedulingv1.PriorityClass) {
			pc.Description = "more"
			pc.GlobalDefault = true
		})},
		{name: "value change", old: classForValidation("high", 10), new: classForValidation("high", 11),
			want: []string{"FieldValueForbidden value"}},
		{name: "policy change", old: classForValidation("high", 10), new: classForValidation("high", 10, withPolicy(corev1.PreemptNever)),
			want: []string{"FieldValueInvalid preemptionPolicy"}},
		{name: "rename", old: classForValidation("high", 10), new: classForValidation("higher", 10),
			want: []string{"FieldValueInvalid metadata.name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidatePriorityClassUpdate(tc.new, tc.old), tc.want)
		})
	}
}
