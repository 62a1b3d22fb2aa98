package podtemplate

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template() *corev1.PodTemplate {
	t := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns"},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		},
	}
	SetDefaults(t)
	return t
}

// TestValidate: a template's spec is checked as a pod's, under template.spec; a template gets
// the PodSpec defaults but not the pod-only ones.
func TestValidate(t *testing.T) {
	tp := template()
	if errs := Strategy.Validate(context.Background(), tp); len(errs) > 0 {
		t.Fatalf("a defaulted template: %v", errs)
	}
	if tp.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || tp.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("PodSpec defaults missing: %+v", tp.Template.Spec)
	}
	if tp.Template.Spec.EnableServiceLinks != nil {
		t.Errorf("a pod-only default (enableServiceLinks) was set on a template")
	}
	bad := template()
	bad.Template.Spec.Containers[0].Name = "C_1"
	bad.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Image: "x"}}}
	got := Strategy.Validate(context.Background(), bad).ToAggregate().Error()
	for _, want := range []string{`template.spec.containers[0].name: Invalid value: "C_1"`, "template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q lack %q", got, want)
		}
	}
}

func TestGeneration(t *testing.T) {
	tp := template()
	Strategy.PrepareForCreate(context.Background(), tp)
	changed := tp.DeepCopy()
	changed.Template.Spec.Containers[0].Image = "busybox:2"
	Strategy.PrepareForUpdate(context.Background(), changed, tp)
	if tp.Generation != 1 || changed.Generation != 2 {
		t.Errorf("generations %d → %d, want 1 → 2", tp.Generation, changed.Generation)
	}
}
