package kuberuntime

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// res is a ResourceRequirements from "cpu=20m", "lim:memory=50Mi" terms.
func res(terms ...string) v1.ResourceRequirements {
	var r v1.ResourceRequirements
	for _, t := range terms {
		list := &r.Requests
		if rest, ok := strings.CutPrefix(t, "lim:"); ok {
			list, t = &r.Limits, rest
		}
		name, q, _ := strings.Cut(t, "=")
		if *list == nil {
			*list = v1.ResourceList{}
		}
		(*list)[v1.ResourceName(name)] = resource.MustParse(q)
	}
	return r
}

func (b *podBuilder) resources(name string, r v1.ResourceRequirements) *podBuilder {
	containerSpec(b.pod, name).Resources = r
	return b
}

func (b *podBuilder) resizePolicy(name string, resource v1.ResourceName, p v1.ResourceResizeRestartPolicy) *podBuilder {
	c := containerSpec(b.pod, name)
	c.ResizePolicy = append(c.ResizePolicy, v1.ContainerResizePolicy{ResourceName: resource, RestartPolicy: p})
	return b
}

// actuatedMap is an ActuatedLookup over a map.
func actuatedMap(m map[string]v1.ResourceRequirements) ActuatedLookup {
	return func(name string) (v1.ResourceRequirements, bool) { r, ok := m[name]; return r, ok }
}

func updateNames(p podActions) map[v1.ResourceName][]string {
	out := map[v1.ResourceName][]string{}
	for name, list := range p.ContainersToUpdate {
		for _, u := range list {
			out[name] = append(out[name], u.spec.Name)
		}
	}
	return out
}

// The conformance test's resize of five containers: each change is planned in place, for
// the resource it touches, decreases before increases; nothing restarts.
func TestComputePodActionsResizeInPlace(t *testing.T) {
	p := newPod().containers("c1", "c2", "c3", "c4", "c5").
		resources("c1", res("cpu=25m", "lim:cpu=35m")).         // cpu request up, cpu limit added
		resources("c2", res("memory=30Mi", "lim:memory=50Mi")). // memory request down, limit added
		resources("c3", res("cpu=20m", "memory=30Mi")).         // memory request down
		resources("c4", res("cpu=15m", "memory=35Mi")).         // cpu down, memory request added
		resources("c5", res("cpu=20m", "memory=40Mi"))          // memory up, cpu request added
	actuated := actuatedMap(map[string]v1.ResourceRequirements{
		"c1": res("cpu=20m"),
		"c2": res("memory=35Mi"),
		"c3": res("cpu=20m", "memory=35Mi"),
		"c4": res("cpu=20m"),
		"c5": res("memory=35Mi"),
	})
	s := statusOf(p).ready().running("c1", "c2", "c3", "c4", "c5")
	got := computePodActions(p.pod, s.s, nil, actuated)
	if len(got.ContainersToKill) != 0 || len(got.ContainersToStart) != 0 || got.KillPod || got.UpdatePodResources {
		t.Fatalf("a resize without restart policies restarts: %s", got)
	}
	want := map[v1.ResourceName][]string{
		// c2's limit goes from none to 50Mi (up); c3's request down, first; c4's request up;
		// c5's up.
		v1.ResourceMemory: {"c3", "c2", "c4", "c5"},
		// c4 down first; c1's limit added; c5's request added.
		v1.ResourceCPU: {"c4", "c1", "c5"},
	}
	if names := updateNames(got); !reflect.DeepEqual(names, want) {
		t.Errorf("ContainersToUpdate = %v, want %v", names, want)
	}

	// Actuated as allocated: nothing to do.
	done := actuatedMap(map[string]v1.ResourceRequirements{})
	for _, c := range p.pod.Spec.Containers {
		r := c.Resources
		prev := done
		done = func(name string) (v1.ResourceRequirements, bool) {
			if name == c.Name {
				return r, true
			}
			return prev(name)
		}
	}
	if got := computePodActions(p.pod, s.s, nil, done); len(got.ContainersToUpdate) != 0 || got.UpdatePodResources {
		t.Errorf("nothing to resize, yet: %s", got)
	}
	// No record keeper: no resizing at all.
	if got := computePodActions(p.pod, s.s, nil, nil); len(got.ContainersToUpdate) != 0 {
		t.Errorf("resizing without records: %s", got)
	}
}

func TestComputePodActionsResizeRestart(t *testing.T) {
	p := newPod().restart(v1.RestartPolicyNever).containers("a", "b").
		resources("a", res("memory=64Mi", "lim:memory=64Mi")).resizePolicy("a", v1.ResourceMemory, v1.RestartContainer).
		resources("b", res("cpu=200m")).resizePolicy("b", v1.ResourceMemory, v1.RestartContainer)
	actuated := actuatedMap(map[string]v1.ResourceRequirements{
		"a": res("memory=32Mi", "lim:memory=32Mi"),
		"b": res("cpu=100m"), // a cpu change, whose policy is the default NotRequired
	})
	s := statusOf(p).ready().running("a", "b")
	got := computePodActions(p.pod, s.s, nil, actuated)
	if !got.UpdatePodResources || !reflect.DeepEqual(got.ContainersToStart, []int{0}) || len(got.ContainersToKill) != 1 {
		t.Fatalf("plan: %s", got)
	}
	for _, k := range got.ContainersToKill {
		if k.name != "a" || k.message != "Container a resize requires restart" {
			t.Errorf("kill: %+v", k)
		}
	}
	if names := updateNames(got); !reflect.DeepEqual(names, map[v1.ResourceName][]string{v1.ResourceCPU: {"b"}}) {
		t.Errorf("updates: %v", names)
	}
}

// A sidecar is resized in place as an app container; a container not running is not, but
// one about to start with new resources resizes the pod's cgroup first.
func TestComputePodActionsResizeSidecarsAndStarts(t *testing.T) {
	p := newPod().sidecars("side").containers("a", "b").
		resources("side", res("cpu=50m")).resources("a", res("cpu=300m")).resources("b", res("cpu=400m"))
	actuated := actuatedMap(map[string]v1.ResourceRequirements{
		"side": res("cpu=10m"), "a": res("cpu=300m"), "b": res("cpu=100m"),
	})
	s := statusOf(p).ready().running("side", "a").exited("b", 1)
	got := computePodActions(p.pod, s.s, nil, actuated)
	if names := updateNames(got); !reflect.DeepEqual(names, map[v1.ResourceName][]string{v1.ResourceCPU: {"side"}}) {
		t.Errorf("updates: %v", names)
	}
	if !reflect.DeepEqual(got.ContainersToStart, []int{1}) || !got.UpdatePodResources {
		t.Errorf("b restarts with new resources: %s", got)
	}
}
