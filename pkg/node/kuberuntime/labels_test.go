package kuberuntime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestHashContainerStability pins the hash: it is annotated on running containers, so a
// change would restart every container of every node on upgrade.
func TestHashContainerStability(t *testing.T) {
	c := &v1.Container{Name: "app", Image: "busybox:1.36"}
	const want = uint64(0x3a5f344048b646ea) // fnv-1a 64 of "app\x00busybox:1.36"
	if got := HashContainer(c); got != want {
		t.Errorf("HashContainer() = %#x, want %#x", got, want)
	}

	// Fields a running pod cannot change, or whose change needs no restart, do not count.
	other := c.DeepCopy()
	other.Command = []string{"sh"}
	other.Env = []v1.EnvVar{{Name: "A", Value: "b"}}
	other.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	other.TerminationMessagePath = "/dev/termination-log"
	if HashContainer(other) != HashContainer(c) {
		t.Errorf("the hash covers fields beyond name and image")
	}
	for _, changed := range []*v1.Container{{Name: "app", Image: "busybox:1.37"}, {Name: "app2", Image: "busybox:1.36"}, {Name: "ap", Image: "pbusybox:1.36"}} {
		if HashContainer(changed) == HashContainer(c) {
			t.Errorf("HashContainer(%+v) equals the original's", changed)
		}
	}
}

func TestContainerAnnotationsRoundTrip(t *testing.T) {
	grace, deletion := int64(30), int64(5)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid", DeletionGracePeriodSeconds: &deletion},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
	c := &v1.Container{
		Name: "app", Image: "busybox:1.36",
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
			HTTPGet: &v1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("http")},
		}},
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
	}
	labels := containerInfoFromLabels(newContainerLabels(c, pod))
	if labels != (labeledContainer{PodName: "web", PodNamespace: "ns", PodUID: "uid", ContainerName: "app"}) {
		t.Errorf("labels = %+v", labels)
	}
	got := containerInfoFromAnnotations(newContainerAnnotations(c, pod, 3))
	want := annotatedContainer{
		Hash:                      HashContainer(c),
		RestartCount:              3,
		TerminationMessagePath:    "/dev/termination-log",
		TerminationMessagePolicy:  v1.TerminationMessageFallbackToLogsOnError,
		PodDeletionGracePeriod:    &deletion,
		PodTerminationGracePeriod: &grace,
		PreStop:                   c.Lifecycle.PreStop,
		Ports:                     c.Ports,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations round trip:\n got %+v\nwant %+v", got, want)
	}

	// Annotations berth did not write read as unset.
	if got := containerInfoFromAnnotations(map[string]string{containerHashAnnotation: "zz", restartCountAnnotation: "x"}); got.Hash != 0 || got.RestartCount != 0 {
		t.Errorf("garbage annotations = %+v", got)
	}
}

func TestPodLabels(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid", Labels: map[string]string{"app": "web", podNameLabel: "spoof"}}}
	want := map[string]string{"app": "web", podNameLabel: "web", podNamespaceLabel: "ns", podUIDLabel: "uid"}
	if got := newPodLabels(pod); !reflect.DeepEqual(got, want) {
		t.Errorf("newPodLabels() = %v, want %v", got, want)
	}
}
