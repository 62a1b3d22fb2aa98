package workload

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestIntOrPercent(t *testing.T) {
	path := field.NewPath("x")
	tests := []struct {
		v     intstr.IntOrString
		value int
		errs  []string
	}{
		{intstr.FromInt32(3), 3, nil},
		{intstr.FromString("25%"), 25, nil},
		{intstr.FromString("100%"), 100, nil},
		{intstr.FromString("101%"), 101, []string{`x: Invalid value: "101%": must not be greater than 100%`}},
		{intstr.FromInt32(-1), -1, []string{"x: Invalid value: -1: must be greater than or equal to 0"}},
		{intstr.FromString("5"), 5, []string{`x: Invalid value: "5": a valid percent string must be a numeric string followed by an ending '%'`}},
	}
	for _, tt := range tests {
		errs := append(ValidatePositiveIntOrPercent(tt.v, path), IsNotMoreThan100Percent(tt.v, path)...)
		if len(errs) != len(tt.errs) {
			t.Errorf("%s: errors %v, want %v", tt.v.String(), errs, tt.errs)
			continue
		}
		for i := range errs {
			if !strings.Contains(errs[i].Error(), tt.errs[i]) {
				t.Errorf("%s: error %q, want %q", tt.v.String(), errs[i].Error(), tt.errs[i])
			}
		}
		if got := IntOrPercentValue(tt.v); got != tt.value && len(tt.errs) == 0 {
			t.Errorf("%s: value %d, want %d", tt.v.String(), got, tt.value)
		}
	}
	if z := IntOrZero(nil); z.IntValue() != 0 {
		t.Errorf("nil is not 0")
	}
}

func TestIsDecremented(t *testing.T) {
	for _, tt := range []struct {
		update, old *int32
		want        bool
	}{
		{nil, nil, false}, {ptr.To[int32](1), nil, false}, {nil, ptr.To[int32](1), true},
		{ptr.To[int32](1), ptr.To[int32](2), true}, {ptr.To[int32](2), ptr.To[int32](2), false},
	} {
		if got := IsDecremented(tt.update, tt.old); got != tt.want {
			t.Errorf("IsDecremented(%v, %v) = %v", ptr.Deref(tt.update, -9), ptr.Deref(tt.old, -9), got)
		}
	}
}

func TestCellsAndWarnings(t *testing.T) {
	names, images := ContainerCells([]corev1.Container{{Name: "a", Image: "x"}, {Name: "b", Image: "y:1"}})
	if names != "a,b" || images != "x,y:1" {
		t.Errorf("cells %q %q", names, images)
	}
	if w := NameWarnings("web"); w != nil {
		t.Errorf("a DNS label warned: %v", w)
	}
	if w := NameWarnings("web.v2"); len(w) != 1 || !strings.HasPrefix(w[0], "metadata.name: this is used in Pod names and hostnames") {
		t.Errorf("warnings %v", w)
	}
}

func TestTemplateWarnings(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](-1)}}
	const graceWarning = "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"
	if w := CreateWarnings("web.v2", tmpl); len(w) != 2 || !strings.HasPrefix(w[0], "metadata.name: ") || w[1] != graceWarning {
		t.Errorf("create warnings %q", w)
	}
	if w := CreateWarnings("web", nil); w != nil {
		t.Errorf("no template, a DNS label: warnings %q", w)
	}
	if w := UpdateWarnings(false, tmpl, tmpl); w != nil {
		t.Errorf("an unchanged spec warned: %q", w)
	}
	if w := UpdateWarnings(true, tmpl, tmpl); len(w) != 1 || w[0] != graceWarning {
		t.Errorf("update warnings %q", w)
	}
}
