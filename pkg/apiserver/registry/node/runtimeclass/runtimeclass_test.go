package runtimeclass

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateRuntimeClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		rc   nodev1.RuntimeClass
		want string
	}{
		{"valid", nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, ""},
		{"no handler", nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, "handler: Required value"},
		{"bad handler", nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Handler: "Run.SC"}, `handler: Invalid value: "Run.SC"`},
		{"negative overhead", nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Handler: "h",
			Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}, "overhead.limits[cpu]"},
		{"duplicate toleration", nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Handler: "h",
			Scheduling: &nodev1.Scheduling{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}, {Key: "k", Operator: corev1.TolerationOpExists}}}},
			"scheduling.tolerations[1]: Duplicate value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateRuntimeClass(&tc.rc)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
}
