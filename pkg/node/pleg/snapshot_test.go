package pleg

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// evs renders events compactly: "ContainerStarted/c1".
func evs(events []*PodLifecycleEvent) string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s/%v", e.Type, e.Data))
	}
	return strings.Join(out, " ")
}

func TestContainerEvents(t *testing.T) {
	tests := []struct {
		old, new plegState
		want     string
	}{
		{plegNonExistent, plegRunning, "ContainerStarted/c"},
		{plegUnknown, plegRunning, "ContainerStarted/c"},
		{plegExited, plegRunning, "ContainerStarted/c"},
		{plegRunning, plegExited, "ContainerDied/c"},
		{plegNonExistent, plegExited, "ContainerDied/c"},
		{plegUnknown, plegExited, "ContainerDied/c"},
		{plegNonExistent, plegUnknown, "ContainerChanged/c"},
		{plegRunning, plegUnknown, "ContainerChanged/c"},
		{plegExited, plegNonExistent, "ContainerRemoved/c"},
		{plegRunning, plegNonExistent, "ContainerDied/c ContainerRemoved/c"},
		{plegUnknown, plegNonExistent, "ContainerDied/c ContainerRemoved/c"},
		{plegRunning, plegRunning, ""},
		{plegExited, plegExited, ""},
		{plegUnknown, plegUnknown, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s->%s", tt.old, tt.new), func(t *testing.T) {
			got := containerEvents("pod", "c", tt.old, tt.new)
			if evs(got) != tt.want {
				t.Errorf("got %q, want %q", evs(got), tt.want)
			}
			for _, e := range got {
				if e.ID != "pod" {
					t.Errorf("event for pod %q", e.ID)
				}
			}
		})
	}
}

func TestComputeEvents(t *testing.T) {
	tests := []struct {
		name     string
		old, new podSnapshot
		want     string
	}{
		{"both absent", nil, nil, ""},
		{"new pod", nil, podSnapshot{"sb": plegRunning, "c1": plegRunning, "c2": plegUnknown},
			"ContainerStarted/c1 ContainerChanged/c2 ContainerStarted/sb"},
		{"no change", podSnapshot{"sb": plegRunning, "c1": plegRunning}, podSnapshot{"sb": plegRunning, "c1": plegRunning}, ""},
		{"container exits", podSnapshot{"sb": plegRunning, "c1": plegRunning}, podSnapshot{"sb": plegRunning, "c1": plegExited},
			"ContainerDied/c1"},
		{"restart: old exited and removed, new one runs",
			podSnapshot{"sb": plegRunning, "c1": plegExited}, podSnapshot{"sb": plegRunning, "c2": plegRunning},
			"ContainerRemoved/c1 ContainerStarted/c2"},
		{"pod gone while running", podSnapshot{"sb": plegRunning, "c1": plegRunning}, nil,
			"ContainerDied/c1 ContainerRemoved/c1 ContainerDied/sb ContainerRemoved/sb"},
		{"pod gone after stopping", podSnapshot{"sb": plegExited, "c1": plegExited}, nil,
			"ContainerRemoved/c1 ContainerRemoved/sb"},
		{"sandbox stopped", podSnapshot{"sb": plegRunning}, podSnapshot{"sb": plegExited}, "ContainerDied/sb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := evs(computeEvents("pod", tt.old, tt.new)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSnapshots(t *testing.T) {
	id := func(s string) container.ContainerID { return container.ContainerID{Type: "containerd", ID: s} }
	pod := &container.Pod{
		ID: "u",
		Containers: []*container.Container{
			{ID: id("c1"), State: container.ContainerStateRunning},
			{ID: id("c2"), State: container.ContainerStateCreated},
			{ID: id("c3"), State: container.ContainerStateExited},
			{ID: id("c4"), State: container.ContainerStateUnknown},
		},
		Sandboxes: []*container.Container{{ID: id("sb"), State: container.ContainerStateRunning}},
	}
	want := podSnapshot{"c1": plegRunning, "c2": plegUnknown, "c3": plegExited, "c4": plegUnknown, "sb": plegRunning}
	if got := snapshotOfPod(pod); !reflect.DeepEqual(got, want) {
		t.Errorf("snapshotOfPod = %v, want %v", got, want)
	}
	status := &container.PodStatus{
		ID: "u",
		ContainerStatuses: []*container.Status{
			{ID: id("c1"), State: container.ContainerStateRunning},
			{ID: id("c2"), State: container.ContainerStateCreated},
			{ID: id("c3"), State: container.ContainerStateExited},
			{ID: id("c4"), State: container.ContainerStateUnknown},
		},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY},
			{Id: "old", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}},
	}
	want["old"] = plegExited
	if got := snapshotOfStatus(status); !reflect.DeepEqual(got, want) {
		t.Errorf("snapshotOfStatus = %v, want %v", got, want)
	}
	if snapshotOfPod(nil) != nil || snapshotOfStatus(&container.PodStatus{ID: types.UID("u")}) != nil {
		t.Error("an absent or empty pod should have a nil snapshot")
	}
}
