package runtime

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

func TestNodeToStatus(t *testing.T) {
	all := lister(makeNodes("n1", "n2", "n3", "n4"))
	unschedulable := framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
	unresolvable := framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector")
	tests := []struct {
		name     string
		explicit map[string]*framework.Status
		absent   *framework.Status // nil: the default
		code     framework.Code
		want     []string
	}{
		{
			name:     "absent nodes are UnschedulableAndUnresolvable by default",
			explicit: map[string]*framework.Status{"n1": unschedulable},
			code:     framework.Unschedulable,
			want:     []string{"n1"},
		},
		{
			name:     "absent nodes count when their status matches",
			explicit: map[string]*framework.Status{"n1": unschedulable},
			code:     framework.UnschedulableAndUnresolvable,
			want:     []string{"n2", "n3", "n4"},
		},
		{
			name:   "PreFilter rejected every node",
			absent: framework.NewStatus(framework.Unschedulable, "node(s) didn't satisfy plugin X"),
			code:   framework.Unschedulable,
			want:   []string{"n1", "n2", "n3", "n4"},
		},
		{
			name:     "explicit nodes the snapshot no longer has are left out",
			explicit: map[string]*framework.Status{"n1": unschedulable, "gone": unschedulable, "n2": unresolvable},
			code:     framework.Unschedulable,
			want:     []string{"n1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewDefaultNodeToStatus()
			for n, s := range tt.explicit {
				m.Set(n, s)
			}
			if tt.absent != nil {
				m.SetAbsentNodesStatus(tt.absent)
			}
			nodes, err := m.NodesForStatusCode(all, tt.code)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range nodes {
				got = append(got, n.Node().Name)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NodesForStatusCode (-want +got):\n%s", diff)
			}
			if m.Len() != len(tt.explicit) {
				t.Errorf("Len() = %d, want %d", m.Len(), len(tt.explicit))
			}
			seen := 0
			m.ForEachExplicitNode(func(name string, s *framework.Status) {
				seen++
				if tt.explicit[name] != s {
					t.Errorf("ForEachExplicitNode: %s has %v", name, s)
				}
			})
			if seen != len(tt.explicit) {
				t.Errorf("ForEachExplicitNode visited %d nodes, want %d", seen, len(tt.explicit))
			}
		})
	}

	m := NewDefaultNodeToStatus()
	m.Set("n1", unschedulable)
	if m.Get("n1") != unschedulable || m.Get("n9").Code() != framework.UnschedulableAndUnresolvable || m.AbsentNodesStatus().Code() != framework.UnschedulableAndUnresolvable {
		t.Errorf("Get: n1 %v, n9 %v", m.Get("n1"), m.Get("n9"))
	}
}
