package limitrange

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateLimitRange(t *testing.T) {
	q := resource.MustParse
	item := func(typ corev1.LimitType) corev1.LimitRangeItem {
		return corev1.LimitRangeItem{Type: typ}
	}
	for _, tc := range []struct {
		name  string
		items []corev1.LimitRangeItem
		want  string
	}{
		{"valid", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{"cpu": q("1")}, Max: corev1.ResourceList{"cpu": q("2")}}}, ""},
		{"unknown type", []corev1.LimitRangeItem{item("Node")}, `spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully qualified`},
		{"duplicate type", []corev1.LimitRangeItem{item(corev1.LimitTypePod), item(corev1.LimitTypePod)}, `spec.limits[1].type: Duplicate value: "Pod"`},
		{"pod default", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Default: corev1.ResourceList{"cpu": q("1")}}},
			"spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"},
		{"min over max", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{"memory": q("2Gi")}, Max: corev1.ResourceList{"memory": q("1Gi")}}},
			`spec.limits[0].min[memory]: Invalid value: "2Gi": min value 2Gi is greater than max value 1Gi`},
		{"request over default", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{"cpu": q("1")}, DefaultRequest: corev1.ResourceList{"cpu": q("2")}}},
			"default request value 2 is greater than default limit value 1"},
		{"ratio below one", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: corev1.ResourceList{"cpu": q("500m")}}},
			"ratio 500m is less than 1"},
		{"pvc without storage", []corev1.LimitRangeItem{item(corev1.LimitTypePersistentVolumeClaim)},
			"either minimum or maximum storage value is required, but neither was provided"},
		{"bad resource", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"bogus": q("1")}}}, "spec.limits[0].max[bogus]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: tc.items}}
			errs := ValidateLimitRange(lr)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestSetDefaults(t *testing.T) {
	q := resource.MustParse
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"cpu": q("2")}, Min: corev1.ResourceList{"memory": q("64Mi")}},
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"cpu": q("4")}},
	}}}
	SetDefaults(lr)
	c := lr.Spec.Limits[0]
	if d, r, m := c.Default["cpu"], c.DefaultRequest["cpu"], c.DefaultRequest["memory"]; d.String() != "2" || r.String() != "2" || m.String() != "64Mi" {
		t.Errorf("container defaults %v / %v", c.Default, c.DefaultRequest)
	}
	if lr.Spec.Limits[1].Default != nil {
		t.Errorf("a Pod limit got defaults: %v", lr.Spec.Limits[1].Default)
	}
}
