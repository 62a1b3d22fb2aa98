package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInvalidPods: each bad pod gets 422 naming the field, and nothing is written.
func TestInvalidPods(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		field  string
		reason string
	}{
		{"bad name", func(p *corev1.Pod) { p.Name = "Bad_Name" }, "metadata.name", "a lowercase RFC 1123 subdomain"},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, "spec.containers", "Required value"},
		{"no image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, "spec.containers[0].image", "Required value"},
		{"duplicate container", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }, "spec.containers[1].name", "Duplicate value"},
		{"bad restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, "spec.restartPolicy", "Unsupported value"},
		{"port out of range", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
		}, "spec.containers[0].ports[0].containerPort", "between 1 and 65535"},
		{"requests above limits", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}
		}, "spec.containers[0].resources.requests", "must be less than or equal to cpu limit"},
		{"negative quantity", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1")}
		}, "spec.containers[0].resources.requests[memory]", "must be greater than or equal to 0"},
		{"unknown volume mount", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}, "spec.containers[0].volumeMounts[0].name", "Not found"},
		{"bad toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}, "spec.tolerations[0].operator", "value must be empty when `operator` is 'Exists'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := simplePod("invalid")
			tt.mutate(p)
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want 422 Invalid", err)
			}
			status := err.(apierrors.APIStatus).Status()
			if status.Code != 422 {
				t.Errorf("code %d, want 422", status.Code)
			}
			found := false
			for _, cause := range status.Details.Causes {
				if cause.Field == tt.field && contains(cause.Message, tt.reason) {
					found = true
				}
			}
			if !found {
				t.Errorf("no cause for %s with %q in %v", tt.field, tt.reason, status.Details.Causes)
			}
			list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 0 {
				t.Errorf("an invalid pod was written: %d pods, %v", len(list.Items), err)
			}
		})
	}
}

// TestInvalidOtherResources: every resource validates, with 422 and the field.
func TestInvalidOtherResources(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	cases := []struct {
		name  string
		do    func() error
		field string
	}{
		{"configmap key", func() error {
			_, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{"bad key!": "v"}}, metav1.CreateOptions{})
			return err
		}, "data[bad key!]"},
		{"node taint effect", func() error {
			_, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bad-taint"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: "Sometimes"}}}}, metav1.CreateOptions{})
			return err
		}, "metadata.taints[0].effect"},
		{"namespace name", func() error {
			_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not.a.label"}}, metav1.CreateOptions{})
			return err
		}, "metadata.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want 422", err)
			}
			found := false
			for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
				found = found || cause.Field == tc.field
			}
			if !found {
				t.Errorf("no cause names %s: %v", tc.field, err)
			}
		})
	}
}
