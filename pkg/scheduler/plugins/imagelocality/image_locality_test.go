package imagelocality

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// fakeLister is a snapshot of fixed NodeInfos.
type fakeLister []*framework.NodeInfo

func (l fakeLister) NodeInfos() framework.NodeInfoLister                      { return l }
func (l fakeLister) List() ([]*framework.NodeInfo, error)                     { return l, nil }
func (l fakeLister) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) { return nil, nil }
func (l fakeLister) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return nil, nil
}
func (l fakeLister) Get(name string) (*framework.NodeInfo, error) {
	for _, ni := range l {
		if ni.Node().Name == name {
			return ni, nil
		}
	}
	return nil, fmt.Errorf("node %q not found", name)
}

// fakeHandle serves only the snapshot; any other method panics.
type fakeHandle struct {
	framework.Handle
	lister framework.SharedLister
}

func (h fakeHandle) SnapshotSharedLister() framework.SharedLister { return h.lister }

// buildNodeInfos does what the cache does with status.images: each name of each image maps
// to its size and the number of nodes that report it.
func buildNodeInfos(nodes []*v1.Node) []*framework.NodeInfo {
	summaries := map[string]*framework.ImageStateSummary{}
	for _, n := range nodes {
		seen := sets.New[string]()
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if seen.Has(name) {
					continue
				}
				seen.Insert(name)
				if summaries[name] == nil {
					summaries[name] = &framework.ImageStateSummary{Size: img.SizeBytes}
				}
				summaries[name].NumNodes++
			}
		}
	}
	var infos []*framework.NodeInfo
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		ni.ImageStates = map[string]*framework.ImageStateSummary{}
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				ni.ImageStates[name] = summaries[name]
			}
		}
		infos = append(infos, ni)
	}
	return infos
}

// imageNode returns a node with images given as (size in MB, names...) groups.
func imageNode(name string, images ...image) *v1.Node {
	n := st.MakeNode().Name(name).Obj()
	for _, img := range images {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: img.names, SizeBytes: img.sizeMB * mb})
	}
	return n
}

type image struct {
	sizeMB int64
	names  []string
}

func img(sizeMB int64, names ...string) image { return image{sizeMB: sizeMB, names: names} }

func TestImageLocalityPriority(t *testing.T) {
	node403002000 := []image{
		img(40, "gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"),
		img(300, "gcr.io/300:latest", "gcr.io/300:v1"),
		img(2000, "gcr.io/2000:latest"),
	}
	node25010 := []image{img(250, "gcr.io/250:latest"), img(10, "gcr.io/10:latest", "gcr.io/10:v1")}
	node60040900 := []image{img(600, "gcr.io/600:latest"), img(40, "gcr.io/40:latest"), img(900, "gcr.io/900:latest")}
	node300600900 := []image{img(300, "gcr.io/300:latest"), img(600, "gcr.io/600:latest"), img(900, "gcr.io/900:latest")}
	node400030 := []image{img(4000, "gcr.io/4000:latest"), img(30, "gcr.io/30:latest")}
	node203040 := []image{img(20, "gcr.io/20:latest"), img(30, "gcr.io/30:latest"), img(40, "gcr.io/40:latest")}

	imageVolumePod := st.MakePod().Name("p").Containers("gcr.io/30").Obj()
	imageVolumePod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "gcr.io/300"}}}}
	initPod := st.MakePod().Name("p").Containers("gcr.io/30").Obj()
	initPod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "gcr.io/300"}}

	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  []int64
	}{
		{
			// node1: 40 MB of gcr.io/40 on 1 of 2 nodes -> 20 MB, below the minimum: 0.
			// node2: 250 MB on 1 of 2 -> 125 MB: 100*(125-23)/(2000-23) = 5.
			name:  "two images spread on two nodes, prefer the larger image one",
			pod:   st.MakePod().Name("p").Containers("gcr.io/40", "gcr.io/250").Obj(),
			nodes: []*v1.Node{imageNode("node1", node403002000...), imageNode("node2", node25010...)},
			want:  []int64{0, 5},
		},
		{
			// node1: (40+300)/2 = 170 MB: 100*(170-23)/(2000-23) = 7.
			name:  "two images on one node, prefer this node",
			pod:   st.MakePod().Name("p").Containers("gcr.io/40", "gcr.io/300").Obj(),
			nodes: []*v1.Node{imageNode("node1", node403002000...), imageNode("node2", node25010...)},
			want:  []int64{7, 0},
		},
		{
			// node1: 4000/2 + 30/2 = 2015 MB, above 2000: 100.
			name:  "if exceed limit, use limit",
			pod:   st.MakePod().Name("p").Containers("gcr.io/10", "gcr.io/4000").Obj(),
			nodes: []*v1.Node{imageNode("node1", node400030...), imageNode("node2", node25010...)},
			want:  []int64{100, 0},
		},
		{
			// node1: 4000/3 + 30/3 = 1343 MB: 100*(1343-23)/(2000-23) = 66.
			name:  "if exceed limit, use limit (with a node without images)",
			pod:   st.MakePod().Name("p").Containers("gcr.io/10", "gcr.io/4000").Obj(),
			nodes: []*v1.Node{imageNode("node1", node400030...), imageNode("node2", node25010...), imageNode("node3")},
			want:  []int64{66, 0, 0},
		},
		{
			// node1: 600*2/3 + 900*2/3 = 1000 MB: 100*(1000-23)/(3000-23) = 32.
			// node2: 300/3 + 600*2/3 + 900*2/3 = 1100 MB: 36.
			name:  "pod with multiple large images, node2 is preferred",
			pod:   st.MakePod().Name("p").Containers("gcr.io/300", "gcr.io/600", "gcr.io/900").Obj(),
			nodes: []*v1.Node{imageNode("node1", node60040900...), imageNode("node2", node300600900...), imageNode("node3")},
			want:  []int64{32, 36, 0},
		},
		{
			// node1: 30/2 + 40 = 55 MB: 100*(55-23)/(2000-23) = 1.
			name:  "pod with multiple small images",
			pod:   st.MakePod().Name("p").Containers("gcr.io/30", "gcr.io/40").Obj(),
			nodes: []*v1.Node{imageNode("node1", node203040...), imageNode("node2", node400030...)},
			want:  []int64{1, 0},
		},
		{
			// node1 lacks gcr.io/30; gcr.io/300 on 1 of 2 nodes -> 150 MB:
			// 100*(150-23)/(2000-23) = 6.
			name:  "image volume counts as an image",
			pod:   imageVolumePod,
			nodes: []*v1.Node{imageNode("node1", node300600900...), imageNode("node2", node400030...)},
			want:  []int64{6, 0},
		},
		{
			name:  "same images as the image volume pod, as containers",
			pod:   st.MakePod().Name("p").Containers("gcr.io/30", "gcr.io/300").Obj(),
			nodes: []*v1.Node{imageNode("node1", node300600900...), imageNode("node2", node400030...)},
			want:  []int64{6, 0},
		},
		{
			name:  "init containers count",
			pod:   initPod,
			nodes: []*v1.Node{imageNode("node1", node403002000...), imageNode("node2", node203040...)},
			want:  []int64{6, 0},
		},
		{
			// A tagged image matches only that tag: gcr.io/300:v1 is on node1 only,
			// 300/2 = 150 MB: 100*(150-23)/(1000-23) = 12.
			name:  "explicit tag",
			pod:   st.MakePod().Name("p").Containers("gcr.io/300:v1").Obj(),
			nodes: []*v1.Node{imageNode("node1", node403002000...), imageNode("node2", node300600900...)},
			want:  []int64{12, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			infos := buildNodeInfos(tt.nodes)
			p, err := New(context.Background(), nil, fakeHandle{lister: fakeLister(infos)})
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*ImageLocality)
			for _, runPreScore := range []bool{true, false} {
				ctx := context.Background()
				state := framework.NewCycleState()
				if runPreScore {
					if s := pl.PreScore(ctx, state, tt.pod, infos); !s.IsSuccess() {
						t.Fatalf("PreScore: %v", s)
					}
				}
				var got []int64
				for _, ni := range infos {
					score, s := pl.Score(ctx, state, tt.pod, ni)
					if !s.IsSuccess() {
						t.Fatalf("Score: %v", s)
					}
					got = append(got, score)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("PreScore run %v: scores %v, want %v", runPreScore, got, tt.want)
				}
			}
		})
	}
}

func TestNormalizedImageName(t *testing.T) {
	digest := "sha256:4355a46b19d348dc2f57c046f8ef63d4538ebb936000f3c9ee954a27460dd865"
	for in, want := range map[string]string{
		"root":              "root:latest",
		"gcr.io:5000/root":  "gcr.io:5000/root:latest",
		"root:tag":          "root:tag",
		"root@" + digest:    "root@" + digest,
		"gcr.io:5000/r:tag": "gcr.io:5000/r:tag",
	} {
		if got := normalizedImageName(in); got != want {
			t.Errorf("normalizedImageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCalculatePriority(t *testing.T) {
	tests := []struct {
		sum    int64
		images int
		want   int64
	}{
		{sum: 0, images: 1, want: 0},
		{sum: 23 * mb, images: 1, want: 0},
		{sum: 1000 * mb, images: 1, want: 100},
		{sum: 5000 * mb, images: 1, want: 100},
		{sum: 511*mb + mb/2, images: 1, want: 50},
		{sum: 1000 * mb, images: 2, want: 49},
	}
	for _, tt := range tests {
		if got := calculatePriority(tt.sum, tt.images); got != tt.want {
			t.Errorf("calculatePriority(%d, %d) = %d, want %d", tt.sum, tt.images, got, tt.want)
		}
	}
}

// Score runs for every node of every pod: it must not allocate.
func TestScoreDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	infos := buildNodeInfos([]*v1.Node{imageNode("node1", img(300, "gcr.io/300:latest")), imageNode("node2")})
	pl := &ImageLocality{handle: fakeHandle{lister: fakeLister(infos)}}
	pod := st.MakePod().Name("p").Containers("gcr.io/300", "gcr.io/40").Obj()
	state := framework.NewCycleState()
	pl.PreScore(ctx, state, pod, infos)
	if allocs := testing.AllocsPerRun(100, func() {
		if _, s := pl.Score(ctx, state, pod, infos[0]); !s.IsSuccess() {
			t.Fatal(s)
		}
	}); allocs != 0 {
		t.Errorf("Score allocates %v times", allocs)
	}
}
