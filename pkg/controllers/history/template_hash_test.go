package history

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// nginxTemplate is the template of the Kubernetes documentation's nginx Deployment as the
// API server defaults it, with a CPU limit.
func nginxTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "nginx", Image: "nginx:1.14.2",
				Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Resources:                corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
		},
	}
}

// TestComputeHashMatchesUpstream pins the hashes Kubernetes v1.37.2 computes. The values
// were printed by upstream's own code: pkg/util/hash.DeepHashObject from
// k8s.io/kubernetes@v1.37.2 (built from the module cache) inside the body of
// pkg/controller.ComputeHash, over the same k8s.io/api v0.37.2 types. A change to the
// printing, the hash or the encoding, or a k8s.io/api upgrade that adds fields to
// PodTemplateSpec, moves them (the latter as it does upstream: re-pin then).
func TestComputeHashMatchesUpstream(t *testing.T) {
	nginx := nginxTemplate()
	tests := []struct {
		name      string
		template  *corev1.PodTemplateSpec
		collision *int32
		want      string
	}{
		{"empty template", &corev1.PodTemplateSpec{}, nil, "54f4c57dcb"},
		{"empty template, collision count 1", &corev1.PodTemplateSpec{}, ptr.To[int32](1), "6554565b97"},
		{"nginx", &nginx, nil, "bbf8f9986"},
		{"nginx, collision count 1", &nginx, ptr.To[int32](1), "7df88865ff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ComputeHash(tt.template, tt.collision); got != tt.want {
				t.Errorf("ComputeHash = %q, want upstream's %q", got, tt.want)
			}
		})
	}
}

func TestComputeHashDistinguishes(t *testing.T) {
	a, b := nginxTemplate(), nginxTemplate()
	b.Spec.Containers[0].Image = "nginx:1.16.1"
	zero := int32(0)
	hashes := map[string]string{
		"a":             ComputeHash(&a, nil),
		"b":             ComputeHash(&b, nil),
		"a collision 0": ComputeHash(&a, &zero),
		"a collision 2": ComputeHash(&a, ptr.To[int32](2)),
	}
	seen := map[string]string{}
	for name, h := range hashes {
		if other, ok := seen[h]; ok {
			t.Errorf("%s and %s hash alike: %s", name, other, h)
		}
		seen[h] = name
	}
	// The hash is of the template alone: the labels map's order or a copy change nothing.
	c := *a.DeepCopy()
	if ComputeHash(&c, nil) != hashes["a"] {
		t.Error("a deep copy hashes differently")
	}
}
