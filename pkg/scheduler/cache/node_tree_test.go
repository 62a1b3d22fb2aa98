package cache

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func zoned(name, region, zone string) *v1.Node {
	n := st.MakeNode().Name(name)
	if region != "" {
		n.Label(v1.LabelTopologyRegion, region)
	}
	if zone != "" {
		n.Label(v1.LabelTopologyZone, zone)
	}
	return n.Obj()
}

func TestNodeTree(t *testing.T) {
	cases := []struct {
		name   string
		add    []*v1.Node
		remove []string
		want   []string
	}{{
		name: "empty",
	}, {
		name: "one zone keeps insertion order",
		add:  []*v1.Node{zoned("n1", "", "a"), zoned("n2", "", "a"), zoned("n3", "", "a")},
		want: []string{"n1", "n2", "n3"},
	}, {
		name: "zones interleave in order of first appearance",
		add: []*v1.Node{zoned("a1", "r", "a"), zoned("a2", "r", "a"), zoned("b1", "r", "b"),
			zoned("a3", "r", "a"), zoned("c1", "r", "c"), zoned("b2", "r", "b")},
		want: []string{"a1", "b1", "c1", "a2", "b2", "a3"},
	}, {
		name: "nodes without zone labels form one zone",
		add:  []*v1.Node{zoned("x1", "", ""), zoned("a1", "", "a"), zoned("x2", "", "")},
		want: []string{"x1", "a1", "x2"},
	}, {
		name: "the same zone name in two regions is two zones",
		add:  []*v1.Node{zoned("e1", "east", "z"), zoned("e2", "east", "z"), zoned("w1", "west", "z")},
		want: []string{"e1", "w1", "e2"},
	}, {
		name:   "removal, and a zone that empties goes",
		add:    []*v1.Node{zoned("a1", "", "a"), zoned("b1", "", "b"), zoned("a2", "", "a"), zoned("c1", "", "c")},
		remove: []string{"b1", "a1", "missing"},
		want:   []string{"a2", "c1"},
	}, {
		name: "adding a node again changes nothing",
		add:  []*v1.Node{zoned("a1", "", "a"), zoned("a2", "", "a"), zoned("a1", "", "a")},
		want: []string{"a1", "a2"},
	}, {
		name: "a node whose zone changed moves",
		add:  []*v1.Node{zoned("a1", "", "a"), zoned("a2", "", "a"), zoned("b1", "", "b"), zoned("a1", "", "b")},
		want: []string{"a2", "b1", "a1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			nt := newNodeTree()
			for _, n := range tc.add {
				nt.add(logger, n)
			}
			for _, name := range tc.remove {
				nt.remove(logger, name)
			}
			if got := nt.list(); !slices.Equal(got, tc.want) {
				t.Errorf("list() = %v, want %v", got, tc.want)
			}
			if nt.numNodes != len(tc.want) {
				t.Errorf("numNodes = %d, want %d", nt.numNodes, len(tc.want))
			}
		})
	}
}
