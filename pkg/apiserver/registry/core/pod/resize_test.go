package pod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resizablePod is a running pod without pod-level resources whose node reports container
// resources (so supports resize).
func resizablePod() *corev1.Pod {
	p := runningPod()
	p.Spec.Resources = nil
	p.ResourceVersion = "1"
	p.Generation = 1
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Resources = &corev1.ResourceRequirements{}
	}
	return p
}

func TestValidatePodResize(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name   string
		mutate func(old, cur *corev1.Pod)
		want   *wantErr
	}{
		{"cpu and memory change", func(old, cur *corev1.Pod) {
			webCtr(cur).Resources.Requests["cpu"] = q("300m")
			webCtr(cur).Resources.Limits["memory"] = q("300Mi")
			webCtr(cur).ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "memory", RestartPolicy: corev1.RestartContainer}}
		}, nil},
		{"a sidecar's cpu changes", func(old, cur *corev1.Pod) {
			cur.Spec.InitContainers[1].Resources.Requests = corev1.ResourceList{"cpu": q("50m")}
		}, nil},
		{"requests may not be removed", func(old, cur *corev1.Pod) { delete(webCtr(cur).Resources.Requests, "memory") },
			&wantErr{"spec.containers[0].resources.requests", forbidden, "resource requests cannot be removed"}},
		{"limits may not be removed", func(old, cur *corev1.Pod) { delete(webCtr(cur).Resources.Limits, "cpu") },
			&wantErr{"spec.containers[0].resources.limits", forbidden, "resource limits cannot be removed"}},
		{"other resources are immutable", func(old, cur *corev1.Pod) { webCtr(cur).Resources.Limits["hugepages-2Mi"] = q("8Mi") },
			&wantErr{"spec", forbidden, "only cpu and memory resources are mutable"}},
		{"containers stay in order", func(old, cur *corev1.Pod) { webCtr(cur).Name = "web2" },
			&wantErr{"spec.containers[0].name", forbidden, "containers may not be renamed or reordered on resize"}},
		{"static pods", func(old, cur *corev1.Pod) {
			old.Annotations[corev1.MirrorPodAnnotationKey] = "x"
			cur.Annotations[corev1.MirrorPodAnnotationKey] = "x"
		}, &wantErr{"[]", forbidden, "static pods cannot be resized"}},
		{"pod-level resources", func(old, cur *corev1.Pod) {
			cur.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}}
		}, &wantErr{"[]", forbidden, "resize of pods with pod-level resources is forbidden"}},
		{"a node without resize", func(old, cur *corev1.Pod) {
			old.Status.ContainerStatuses[0].Resources = nil
			webCtr(cur).Resources.Requests["cpu"] = q("300m")
		}, &wantErr{"spec", forbidden, "Pod running on node without support for resize"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := resizablePod(), resizablePod()
			tc.mutate(old, cur)
			ResizeStrategy.PrepareForUpdate(context.Background(), cur, old)
			errs := ValidatePodResize(cur, old)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Errorf("unexpected errors:\n%s", errorLines(errs))
				}
				return
			}
			assertHasError(t, errs, *tc.want)
		})
	}
}

// A best-effort pod may not gain requests: its QoS class would change.
func TestValidatePodResizeQoS(t *testing.T) {
	old := &corev1.Pod{}
	old.Name, old.Namespace, old.ResourceVersion = "p", "ns", "1"
	old.Spec = corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
		Containers: []corev1.Container{minimalContainer("c")}}
	SetDefaults(old)
	old.Status.QOSClass = corev1.PodQOSBestEffort
	cur := old.DeepCopy()
	cur.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"memory": resource.MustParse("35Mi")}
	ResizeStrategy.PrepareForUpdate(context.Background(), cur, old)
	assertHasError(t, ValidatePodResize(cur, old), wantErr{"spec", invalid, "Pod QOS Class may not change as a result of resizing"})
}

// Only the resources and resize policies of a write to pods/resize count; the generation
// moves when they change.
func TestResizeStrategyKeepsOnlyResources(t *testing.T) {
	old, cur := resizablePod(), resizablePod()
	webCtr(cur).Image = "nginx:9"
	cur.Labels["new"] = "label"
	cur.Status.Phase = corev1.PodFailed
	ResizeStrategy.PrepareForUpdate(context.Background(), cur, old)
	if webCtr(cur).Image != webCtr(old).Image || cur.Labels["new"] != "" || cur.Status.Phase != corev1.PodRunning || cur.Generation != 1 {
		t.Errorf("non-resize changes kept: image %s, labels %v, phase %s, generation %d", webCtr(cur).Image, cur.Labels, cur.Status.Phase, cur.Generation)
	}
	cur = resizablePod()
	webCtr(cur).Resources.Requests["cpu"] = resource.MustParse("300m")
	ResizeStrategy.PrepareForUpdate(context.Background(), cur, old)
	if cur.Generation != 2 || !webCtr(cur).Resources.Requests.Cpu().Equal(resource.MustParse("300m")) {
		t.Errorf("resize: generation %d, requests %v", cur.Generation, webCtr(cur).Resources.Requests)
	}
	if errs := ValidatePodResize(cur, old); len(errs) != 0 {
		t.Errorf("unexpected errors:\n%s", errorLines(errs))
	}
}
