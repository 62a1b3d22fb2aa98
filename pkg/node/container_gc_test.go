package node

import (
	"sort"
	"testing"
	"time"

	"github.com/berth-cluster/berth/pkg/node/container"
)

func TestContainersToDelete(t *testing.T) {
	now := time.Now()
	st := func(id, name string, state container.State, age int) *container.Status {
		return &container.Status{ID: container.ContainerID{Type: "containerd", ID: id}, Name: name, State: state, CreatedAt: now.Add(-time.Duration(age) * time.Minute)}
	}
	status := &container.PodStatus{ContainerStatuses: []*container.Status{
		st("a1", "a", container.ContainerStateExited, 3),
		st("a2", "a", container.ContainerStateExited, 2),
		st("a3", "a", container.ContainerStateExited, 1),
		st("a4", "a", container.ContainerStateRunning, 0),
		st("b1", "b", container.ContainerStateExited, 5),
		st("b2", "b", container.ContainerStateExited, 4),
	}}
	ids := func(l []container.ContainerID) []string {
		var out []string
		for _, id := range l {
			out = append(out, id.ID)
		}
		sort.Strings(out)
		return out
	}
	for _, tt := range []struct {
		name   string
		filter string
		keep   int
		want   []string
	}{
		{"the exited container's name, newest kept", "a3", 1, []string{"a1", "a2"}},
		{"another name", "b2", 1, []string{"b1"}},
		{"an unknown container", "zz", 1, nil},
		{"everything dead", "", 0, []string{"a1", "a2", "a3", "b1", "b2"}},
	} {
		got := ids(containersToDelete(tt.filter, status, tt.keep))
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}
