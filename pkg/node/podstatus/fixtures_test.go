package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// t0 is when the tests' sandboxes are created; containers come after.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// podBuilder makes test pods: makePod("p").containers("a").init("i").restart(v1.RestartPolicyNever).obj().
type podBuilder struct{ pod *v1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Generation: 1},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, NodeName: "node"},
	}}
}

func (b *podBuilder) containers(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, v1.Container{Name: n, Image: "img-" + n})
	}
	return b
}

func (b *podBuilder) init(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, v1.Container{Name: n, Image: "img-" + n})
	}
	return b
}

func (b *podBuilder) sidecar(names ...string) *podBuilder {
	always := v1.ContainerRestartPolicyAlways
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, v1.Container{Name: n, Image: "img-" + n, RestartPolicy: &always})
	}
	return b
}

func (b *podBuilder) restart(p v1.RestartPolicy) *podBuilder { b.pod.Spec.RestartPolicy = p; return b }

func (b *podBuilder) with(f func(*v1.Pod)) *podBuilder { f(b.pod); return b }

func (b *podBuilder) obj() *v1.Pod { return b.pod }

// runtimeBuilder makes the runtime's view of a pod: a ready sandbox with an IP, and
// containers created one second apart in the order they are added.
type runtimeBuilder struct {
	s *container.PodStatus
	n int
}

func runtimeOf(pod *v1.Pod) *runtimeBuilder {
	return &runtimeBuilder{s: &container.PodStatus{
		ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
		IPs:             []string{"10.88.0.5"},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox("10.88.0.5")},
	}}
}

func readySandbox(ip string) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:        "sb1",
		Metadata:  &runtimeapi.PodSandboxMetadata{Attempt: 0},
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: t0.UnixNano(),
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD,
		}}},
	}
}

func (r *runtimeBuilder) add(name string, state container.State, exit int, restarts int) *runtimeBuilder {
	r.n++
	created := t0.Add(time.Duration(r.n) * time.Second)
	cs := &container.Status{
		ID:           container.ContainerID{Type: "containerd", ID: name + "-" + string(rune('a'+r.n))},
		Name:         name,
		State:        state,
		CreatedAt:    created,
		Image:        "docker.io/library/img-" + name + ":latest",
		ImageRef:     "sha256:" + name,
		RestartCount: restarts,
	}
	switch state {
	case container.ContainerStateRunning:
		cs.StartedAt = created.Add(100 * time.Millisecond)
	case container.ContainerStateExited:
		cs.StartedAt = created.Add(100 * time.Millisecond)
		cs.FinishedAt = created.Add(500 * time.Millisecond)
		cs.ExitCode = exit
	}
	// The runtime lists the newest first.
	r.s.ContainerStatuses = append([]*container.Status{cs}, r.s.ContainerStatuses...)
	return r
}

func (r *runtimeBuilder) running(name string) *runtimeBuilder {
	return r.add(name, container.ContainerStateRunning, 0, r.restarts(name))
}

func (r *runtimeBuilder) exited(name string, code int) *runtimeBuilder {
	return r.add(name, container.ContainerStateExited, code, r.restarts(name))
}

func (r *runtimeBuilder) restarts(name string) int {
	n := 0
	for _, c := range r.s.ContainerStatuses {
		if c.Name == name {
			n++
		}
	}
	return n
}

func (r *runtimeBuilder) last() *container.Status { return r.s.ContainerStatuses[0] }

func (r *runtimeBuilder) obj() *container.PodStatus { return r.s }

func findCS(t interface{ Fatalf(string, ...any) }, statuses []v1.ContainerStatus, name string) v1.ContainerStatus {
	for _, s := range statuses {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status for container %q in %+v", name, statuses)
	return v1.ContainerStatus{}
}

func cond(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	return findCondition(s.Conditions, t)
}
