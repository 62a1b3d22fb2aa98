package deployment

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReplicaSetName(t *testing.T) {
	if got := replicaSetName("web", "5d4f8b7c9"); got != "web-5d4f8b7c9" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("a", 250)
	got := replicaSetName(long, "5d4f8b7c9")
	if len(got) != 253 || !strings.HasSuffix(got, "a-5d4f8b7c9") {
		t.Errorf("long name: got %q (%d characters), want 253 ending in the hash", got, len(got))
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	template := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.14.2"}}}}
	}
	a, b := template(), template()
	b.Labels = withLabel(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey, "abc")
	if !equalIgnoreHash(&a, &b) {
		t.Error("templates differing only in the hash label should be equal")
	}
	if a.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" || b.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "abc" {
		t.Error("equalIgnoreHash changed its arguments")
	}
	b.Labels["other"] = "x"
	if equalIgnoreHash(&a, &b) {
		t.Error("templates differing in another label should differ")
	}
	// Only the hash label: nil labels equal an empty map once it is removed.
	c, d := corev1.PodTemplateSpec{}, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "x"}}}
	if !equalIgnoreHash(&c, &d) {
		t.Error("nil labels should equal labels of only the hash")
	}
}
