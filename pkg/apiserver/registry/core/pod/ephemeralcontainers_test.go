package pod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func debugContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}}
}

func TestValidatePodEphemeralContainersUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(old, cur *corev1.Pod)
		want   *wantErr
	}{
		{"one may be added", func(old, cur *corev1.Pod) {
			cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, debugContainer("debug-2"))
		}, nil},
		{"an existing one may not be removed", func(old, cur *corev1.Pod) { cur.Spec.EphemeralContainers = nil },
			&wantErr{"spec.ephemeralContainers", forbidden, `existing ephemeral containers "debug" may not be removed`}},
		{"an existing one may not be changed", func(old, cur *corev1.Pod) { cur.Spec.EphemeralContainers[0].Image = "alpine" },
			&wantErr{"spec.ephemeralContainers", forbidden, `existing ephemeral containers "debug" may not be changed`}},
		{"order may change", func(old, cur *corev1.Pod) {
			old.Spec.EphemeralContainers = append(old.Spec.EphemeralContainers, debugContainer("debug-2"))
			cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debug-2"), debugContainer("debug")}
		}, nil},
		{"a new one is validated", func(old, cur *corev1.Pod) {
			c := debugContainer("debug-2")
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, c)
		}, &wantErr{"spec.ephemeralContainers[1].ports", forbidden, "cannot be set for an Ephemeral Container"}},
		{"static pods take none", func(old, cur *corev1.Pod) {
			old.Annotations[corev1.MirrorPodAnnotationKey], cur.Annotations[corev1.MirrorPodAnnotationKey] = "x", "x"
			cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, debugContainer("debug-2"))
		}, &wantErr{"[]", forbidden, "static pods do not support ephemeral containers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := runningPod(), runningPod()
			old.ResourceVersion, cur.ResourceVersion = "1", "1"
			old.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debug")}
			cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debug")}
			tc.mutate(old, cur)
			errs := ValidatePodEphemeralContainersUpdate(cur, old)
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

// TestEphemeralContainersStrategyKeepsTheRest: a write through pods/ephemeralcontainers
// changes the ephemeral containers and nothing else, and counts as a new generation.
func TestEphemeralContainersStrategyKeepsTheRest(t *testing.T) {
	old, cur := runningPod(), runningPod()
	old.Generation, cur.Generation = 3, 3
	cur.Spec.Containers[0].Image = "changed"
	cur.Labels["new"] = "label"
	cur.Status.Phase = corev1.PodFailed
	cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debug")}
	EphemeralContainersStrategy.PrepareForUpdate(context.Background(), cur, old)
	if cur.Spec.Containers[0].Image != old.Spec.Containers[0].Image || cur.Status.Phase != old.Status.Phase {
		t.Errorf("the write changed more than the ephemeral containers: image %q, phase %q", cur.Spec.Containers[0].Image, cur.Status.Phase)
	}
	if len(cur.Spec.EphemeralContainers) != 1 || cur.Generation != 4 {
		t.Errorf("ephemeral containers %v, generation %d; want the debug container and generation 4", cur.Spec.EphemeralContainers, cur.Generation)
	}
}
