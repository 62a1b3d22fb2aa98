package kuberuntime

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// t0 is when the current sandbox was created; containers created after it are its own.
var t0 = time.Unix(1_700_000_000, 0)

// podBuilder builds test pods.
type podBuilder struct{ pod *v1.Pod }

func newPod() *podBuilder {
	return &podBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways},
	}}
}

func (b *podBuilder) containers(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, v1.Container{Name: n, Image: n + ":v1"})
	}
	return b
}

func (b *podBuilder) inits(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, v1.Container{Name: n, Image: n + ":v1"})
	}
	return b
}

// sidecars adds init containers with restartPolicy Always.
func (b *podBuilder) sidecars(names ...string) *podBuilder {
	always := v1.ContainerRestartPolicyAlways
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, v1.Container{Name: n, Image: n + ":v1", RestartPolicy: &always})
	}
	return b
}

func (b *podBuilder) ephemeral(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.EphemeralContainers = append(b.pod.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: n + ":v1"}})
	}
	return b
}

func (b *podBuilder) restart(p v1.RestartPolicy) *podBuilder { b.pod.Spec.RestartPolicy = p; return b }
func (b *podBuilder) hostNetwork() *podBuilder               { b.pod.Spec.HostNetwork = true; return b }
func (b *podBuilder) deleting() *podBuilder {
	b.pod.DeletionTimestamp = &metav1.Time{Time: t0}
	return b
}
func (b *podBuilder) startupProbe(init string) *podBuilder {
	for i := range b.pod.Spec.InitContainers {
		if b.pod.Spec.InitContainers[i].Name == init {
			b.pod.Spec.InitContainers[i].StartupProbe = &v1.Probe{}
		}
	}
	return b
}
func (b *podBuilder) image(name, image string) *podBuilder {
	if c := containerSpec(b.pod, name); c != nil {
		c.Image = image
	}
	return b
}

// statusBuilder builds the runtime's view of the pod.
type statusBuilder struct {
	pod *v1.Pod
	s   *container.PodStatus
	seq int
}

func statusOf(b *podBuilder) *statusBuilder {
	return &statusBuilder{pod: b.pod, s: &container.PodStatus{ID: b.pod.UID, Name: b.pod.Name, Namespace: b.pod.Namespace}}
}

func (s *statusBuilder) sandbox(state runtimeapi.PodSandboxState, attempt uint32, ip string, network runtimeapi.NamespaceMode) *statusBuilder {
	id := "sandbox-" + string(rune('a'+len(s.s.SandboxStatuses)))
	ss := &runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Attempt: attempt},
		State:     state,
		CreatedAt: t0.UnixNano() - int64(len(s.s.SandboxStatuses))*int64(time.Hour),
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux:     &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: network}}},
	}
	s.s.SandboxStatuses = append(s.s.SandboxStatuses, ss)
	return s
}

// ready adds the current sandbox: ready, attempt 0, with an IP.
func (s *statusBuilder) ready() *statusBuilder {
	return s.sandbox(runtimeapi.PodSandboxState_SANDBOX_READY, 0, "10.0.0.2", runtimeapi.NamespaceMode_POD)
}

// add adds a container status, the newest first (each added one is older than the last
// unless old is set, which dates it before the current sandbox).
func (s *statusBuilder) add(name string, state container.State, exitCode int, old bool) *statusBuilder {
	s.seq++
	created := t0.Add(time.Hour - time.Duration(s.seq)*time.Second)
	if old {
		created = t0.Add(-time.Minute - time.Duration(s.seq)*time.Second)
	}
	hash := uint64(0)
	if c := containerSpec(s.pod, name); c != nil {
		hash = HashContainer(c)
	}
	s.s.ContainerStatuses = append(s.s.ContainerStatuses, &container.Status{
		ID:        container.ContainerID{Type: "containerd", ID: name + "-" + string(rune('0'+s.seq))},
		Name:      name,
		State:     state,
		ExitCode:  exitCode,
		CreatedAt: created,
		Hash:      hash,
	})
	return s
}

func (s *statusBuilder) running(names ...string) *statusBuilder {
	for _, n := range names {
		s.add(n, container.ContainerStateRunning, 0, false)
	}
	return s
}
func (s *statusBuilder) exited(name string, code int) *statusBuilder {
	return s.add(name, container.ContainerStateExited, code, false)
}
func (s *statusBuilder) oldExited(name string, code int) *statusBuilder {
	return s.add(name, container.ContainerStateExited, code, true)
}
func (s *statusBuilder) unknown(name string) *statusBuilder {
	return s.add(name, container.ContainerStateUnknown, 0, false)
}
func (s *statusBuilder) created(name string) *statusBuilder {
	return s.add(name, container.ContainerStateCreated, 0, false)
}

// fakeProbes answers probe results by container name prefix.
type fakeProbes struct {
	liveness, startup map[string]ProbeResult
}

func (f fakeProbes) get(m map[string]ProbeResult, id container.ContainerID) (ProbeResult, bool) {
	for prefix, r := range m {
		if strings.HasPrefix(id.ID, prefix+"-") {
			return r, true
		}
	}
	return ProbeUnknown, false
}
func (f fakeProbes) Liveness(id container.ContainerID) (ProbeResult, bool) {
	return f.get(f.liveness, id)
}
func (f fakeProbes) Startup(id container.ContainerID) (ProbeResult, bool) {
	return f.get(f.startup, id)
}

// plan is the comparable part of podActions: what to kill is by container name.
type plan struct {
	KillPod, CreateSandbox bool
	SandboxID              string
	Attempt                uint32
	Init, Start, Ephemeral []int
	Kill                   []string
}

func planOf(a podActions) plan {
	p := plan{KillPod: a.KillPod, CreateSandbox: a.CreateSandbox, SandboxID: a.SandboxID, Attempt: a.Attempt,
		Init: a.InitContainersToStart, Start: a.ContainersToStart, Ephemeral: a.EphemeralContainersToStart}
	if len(p.Start) == 0 {
		p.Start = nil
	}
	for _, k := range a.ContainersToKill {
		p.Kill = append(p.Kill, k.name+": "+k.message)
	}
	sort.Strings(p.Kill)
	return p
}

func TestComputePodActions(t *testing.T) {
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	notReady := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	podNS, nodeNS := runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_NODE
	tests := []struct {
		name   string
		pod    *podBuilder
		status func(*podBuilder) *statusBuilder
		probes ProbeResults
		want   plan
	}{
		// The sandbox.
		{
			name:   "new pod: create the sandbox and start every container",
			pod:    newPod().containers("a", "b"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p) },
			want:   plan{KillPod: true, CreateSandbox: true, Start: []int{0, 1}},
		},
		{
			name:   "new pod with init containers: the first init container only",
			pod:    newPod().inits("i0", "i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p) },
			want:   plan{KillPod: true, CreateSandbox: true, Init: []int{0}},
		},
		{
			name:   "steady state: nothing to do",
			pod:    newPod().containers("a", "b"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a", "b") },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name: "dead sandbox: kill, recreate with the next attempt, start over",
			pod:  newPod().inits("i0").containers("a"),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).sandbox(notReady, 3, "10.0.0.2", podNS).running("a")
			},
			want: plan{KillPod: true, CreateSandbox: true, SandboxID: "sandbox-a", Attempt: 4, Init: []int{0}},
		},
		{
			name: "two ready sandboxes: reconcile with a new one",
			pod:  newPod().containers("a"),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).sandbox(ready, 1, "10.0.0.3", podNS).sandbox(ready, 0, "10.0.0.2", podNS).running("a")
			},
			want: plan{KillPod: true, CreateSandbox: true, SandboxID: "sandbox-a", Attempt: 2, Start: []int{0}},
		},
		{
			name:   "network namespace changed (now host network)",
			pod:    newPod().containers("a").hostNetwork(),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a") },
			want:   plan{KillPod: true, CreateSandbox: true, Attempt: 1, Start: []int{0}},
		},
		{
			name:   "host network pod in a host network sandbox without IP: fine",
			pod:    newPod().containers("a").hostNetwork(),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).sandbox(ready, 0, "", nodeNS).running("a") },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name:   "pod network sandbox without IP: recreate",
			pod:    newPod().containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).sandbox(ready, 0, "", podNS).running("a") },
			want:   plan{KillPod: true, CreateSandbox: true, SandboxID: "sandbox-a", Attempt: 1, Start: []int{0}},
		},
		{
			name: "dead sandbox, restartPolicy Never, containers ran: only kill",
			pod:  newPod().containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).sandbox(notReady, 0, "10.0.0.2", podNS).exited("a", 0)
			},
			want: plan{KillPod: true, SandboxID: "sandbox-a", Attempt: 1},
		},
		{
			name: "dead sandbox, restartPolicy Never, no container ever created: retry the sandbox",
			pod:  newPod().containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).sandbox(notReady, 0, "", podNS)
			},
			want: plan{KillPod: true, CreateSandbox: true, SandboxID: "sandbox-a", Attempt: 1, Start: []int{0}},
		},
		{
			name: "dead sandbox, OnFailure, every container succeeded: no new sandbox",
			pod:  newPod().containers("a", "b").restart(v1.RestartPolicyOnFailure),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).sandbox(notReady, 0, "10.0.0.2", podNS).exited("a", 0).exited("b", 0)
			},
			want: plan{KillPod: true, SandboxID: "sandbox-a", Attempt: 1},
		},
		{
			name: "dead sandbox, OnFailure: restart only the failed container",
			pod:  newPod().containers("a", "b").restart(v1.RestartPolicyOnFailure),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).sandbox(notReady, 0, "10.0.0.2", podNS).exited("a", 0).exited("b", 2)
			},
			want: plan{KillPod: true, CreateSandbox: true, SandboxID: "sandbox-a", Attempt: 1, Start: []int{1}},
		},

		// Restart policies of app containers.
		{
			name:   "Always: restart an exited container",
			pod:    newPod().containers("a", "b"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a").exited("b", 0) },
			want:   plan{SandboxID: "sandbox-a", Start: []int{1}},
		},
		{
			name:   "OnFailure: restart a failed container",
			pod:    newPod().containers("a", "b").restart(v1.RestartPolicyOnFailure),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a").exited("b", 1) },
			want:   plan{SandboxID: "sandbox-a", Start: []int{1}},
		},
		{
			name:   "OnFailure: keep a succeeded container exited",
			pod:    newPod().containers("a", "b").restart(v1.RestartPolicyOnFailure),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a").exited("b", 0) },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name:   "Never: keep a failed container exited",
			pod:    newPod().containers("a", "b").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a").exited("b", 1) },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name:   "pod terminal: Never and every container exited kills the pod",
			pod:    newPod().containers("a", "b").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("a", 0).exited("b", 1) },
			want:   plan{KillPod: true, SandboxID: "sandbox-a"},
		},
		{
			name:   "pod terminal: OnFailure and every container succeeded kills the pod",
			pod:    newPod().containers("a").restart(v1.RestartPolicyOnFailure),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("a", 0) },
			want:   plan{KillPod: true, SandboxID: "sandbox-a"},
		},
		{
			name:   "pod being deleted restarts nothing",
			pod:    newPod().containers("a", "b").deleting(),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a").exited("b", 1) },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name:   "pod being deleted with nothing running is killed",
			pod:    newPod().containers("a").deleting(),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("a", 1) },
			want:   plan{KillPod: true, SandboxID: "sandbox-a"},
		},
		{
			name:   "a container never created starts",
			pod:    newPod().containers("a", "b"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a") },
			want:   plan{SandboxID: "sandbox-a", Start: []int{1}},
		},
		{
			name:   "a created but never started container starts again",
			pod:    newPod().containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().created("a") },
			want:   plan{SandboxID: "sandbox-a", Start: []int{0}},
		},
		{
			name:   "a container in unknown state is killed and started",
			pod:    newPod().containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().unknown("a") },
			want:   plan{SandboxID: "sandbox-a", Start: []int{0}, Kill: []string{`a: Container is in "unknown" state, try killing it before restart`}},
		},

		// Spec changes and probes.
		{
			name: "image changed: kill and restart",
			pod:  newPod().containers("a", "b"),
			status: func(p *podBuilder) *statusBuilder {
				s := statusOf(p).ready().running("a", "b")
				p.image("b", "b:v2")
				return s
			},
			want: plan{SandboxID: "sandbox-a", Start: []int{1}, Kill: []string{"b: Container b definition changed, will be restarted"}},
		},
		{
			name: "image changed with restartPolicy Never: restarted anyway",
			pod:  newPod().containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder {
				s := statusOf(p).ready().running("a")
				p.image("a", "a:v2")
				return s
			},
			want: plan{SandboxID: "sandbox-a", Start: []int{0}, Kill: []string{"a: Container a definition changed, will be restarted"}},
		},
		{
			name:   "failed liveness probe: kill and restart",
			pod:    newPod().containers("a", "b"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a", "b") },
			probes: fakeProbes{liveness: map[string]ProbeResult{"a": ProbeFailure, "b": ProbeSuccess}},
			want:   plan{SandboxID: "sandbox-a", Start: []int{0}, Kill: []string{"a: Container a failed liveness probe, will be restarted"}},
		},
		{
			name:   "failed startup probe with Never: kill, no restart, the pod is done",
			pod:    newPod().containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a") },
			probes: fakeProbes{startup: map[string]ProbeResult{"a": ProbeFailure}},
			want:   plan{KillPod: true, SandboxID: "sandbox-a", Kill: []string{"a: Container a failed startup probe"}},
		},

		// Init containers.
		{
			name:   "first init container still running: wait",
			pod:    newPod().inits("i0", "i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("i0") },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name:   "first init container done: start the second",
			pod:    newPod().inits("i0", "i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("i0", 0) },
			want:   plan{SandboxID: "sandbox-a", Init: []int{1}},
		},
		{
			name:   "last init container done: start the app containers",
			pod:    newPod().inits("i0", "i1").containers("a", "b"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("i1", 0).exited("i0", 0) },
			want:   plan{SandboxID: "sandbox-a", Start: []int{0, 1}},
		},
		{
			name:   "completed init containers removed, app running: initialized",
			pod:    newPod().inits("i0", "i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a") },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name: "app container from an older sandbox does not make the pod initialized",
			pod:  newPod().inits("i0").containers("a"),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).ready().oldExited("a", 0)
			},
			want: plan{SandboxID: "sandbox-a", Init: []int{0}},
		},
		{
			name:   "failed init container, Always: run it again",
			pod:    newPod().inits("i0", "i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("i0", 1) },
			want:   plan{SandboxID: "sandbox-a", Init: []int{0}},
		},
		{
			name:   "failed init container, Never: the pod fails",
			pod:    newPod().inits("i0", "i1").containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("i0", 1) },
			want:   plan{KillPod: true, SandboxID: "sandbox-a"},
		},
		{
			name:   "init container in unknown state, Never: the pod fails",
			pod:    newPod().inits("i0").containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().unknown("i0") },
			want:   plan{KillPod: true, SandboxID: "sandbox-a"},
		},
		{
			name:   "init container in unknown state, OnFailure: kill and rerun",
			pod:    newPod().inits("i0").containers("a").restart(v1.RestartPolicyOnFailure),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().unknown("i0") },
			want:   plan{SandboxID: "sandbox-a", Init: []int{0}, Kill: []string{`i0: Init container is in "unknown" state, try killing it before restart`}},
		},
		{
			name:   "init container created but not started: start it",
			pod:    newPod().inits("i0").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().created("i0") },
			want:   plan{SandboxID: "sandbox-a", Init: []int{0}},
		},
		{
			name:   "nothing started in the ready sandbox yet: the first init container",
			pod:    newPod().inits("i0", "i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready() },
			want:   plan{SandboxID: "sandbox-a", Init: []int{0}},
		},

		// Sidecars: init containers with restartPolicy Always.
		{
			name:   "sidecar running: start the next init container",
			pod:    newPod().sidecars("s0").inits("i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("s0") },
			want:   plan{SandboxID: "sandbox-a", Init: []int{1}},
		},
		{
			name:   "two sidecars in order",
			pod:    newPod().sidecars("s0", "s1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("s0") },
			want:   plan{SandboxID: "sandbox-a", Init: []int{1}},
		},
		{
			name:   "last init container is a running sidecar: start the app containers",
			pod:    newPod().inits("i0").sidecars("s1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("s1").exited("i0", 0) },
			want:   plan{SandboxID: "sandbox-a", Start: []int{0}},
		},
		{
			name:   "sidecar keeps running beside the app containers",
			pod:    newPod().sidecars("s0").inits("i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a", "s0").exited("i1", 0) },
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name: "exited sidecar restarts, even after initialization",
			pod:  newPod().sidecars("s0").inits("i1").containers("a"),
			status: func(p *podBuilder) *statusBuilder {
				return statusOf(p).ready().running("a").exited("i1", 0).exited("s0", 1)
			},
			want: plan{SandboxID: "sandbox-a", Init: []int{0}},
		},
		{
			name:   "sidecar status gone after initialization: start it",
			pod:    newPod().sidecars("s0").containers("a"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a") },
			want:   plan{SandboxID: "sandbox-a", Init: []int{0}},
		},
		{
			name: "sidecar definition changed: kill and restart",
			pod:  newPod().sidecars("s0").containers("a"),
			status: func(p *podBuilder) *statusBuilder {
				s := statusOf(p).ready().running("a", "s0")
				p.image("s0", "s0:v2")
				return s
			},
			want: plan{SandboxID: "sandbox-a", Init: []int{0}, Kill: []string{"s0: Init container s0 definition changed"}},
		},
		{
			name:   "sidecar with a startup probe not yet run: wait",
			pod:    newPod().sidecars("s0").inits("i1").containers("a").startupProbe("s0"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("s0") },
			probes: fakeProbes{},
			want:   plan{SandboxID: "sandbox-a"},
		},
		{
			name:   "sidecar with a startup probe and no prober: go on",
			pod:    newPod().sidecars("s0").inits("i1").containers("a").startupProbe("s0"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("s0") },
			want:   plan{SandboxID: "sandbox-a", Init: []int{1}},
		},
		{
			name:   "sidecar failed its startup probe: kill and restart",
			pod:    newPod().sidecars("s0").inits("i1").containers("a").startupProbe("s0"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("s0") },
			probes: fakeProbes{startup: map[string]ProbeResult{"s0": ProbeFailure}},
			want:   plan{SandboxID: "sandbox-a", Init: []int{0}, Kill: []string{"s0: Init container s0 failed startup probe"}},
		},
		{
			name:   "app containers done, sidecar running: kill the pod, do not restart sidecars",
			pod:    newPod().sidecars("s0").containers("a").restart(v1.RestartPolicyNever),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().exited("a", 0).running("s0") },
			want:   plan{KillPod: true, SandboxID: "sandbox-a"},
		},

		// Ephemeral containers.
		{
			name:   "ephemeral container starts, even during initialization",
			pod:    newPod().inits("i0").containers("a").ephemeral("debug"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("i0") },
			want:   plan{SandboxID: "sandbox-a", Ephemeral: []int{0}},
		},
		{
			name:   "exited ephemeral container never restarts",
			pod:    newPod().containers("a").ephemeral("debug"),
			status: func(p *podBuilder) *statusBuilder { return statusOf(p).ready().running("a").exited("debug", 1) },
			want:   plan{SandboxID: "sandbox-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := tt.status(tt.pod).s
			got := planOf(computePodActions(tt.pod.pod, status, tt.probes, nil))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("computePodActions() =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

func TestComputePodActionsKillInfo(t *testing.T) {
	p := newPod().containers("a")
	s := statusOf(p).ready().running("a")
	probes := fakeProbes{liveness: map[string]ProbeResult{"a": ProbeFailure}}
	got := computePodActions(p.pod, s.s, probes, nil)
	for id, k := range got.ContainersToKill {
		if id != s.s.ContainerStatuses[0].ID || k.reason != reasonLivenessProbe || k.spec != &p.pod.Spec.Containers[0] {
			t.Errorf("kill %v = %+v, want the liveness reason and the container's spec", id, k)
		}
	}
}
