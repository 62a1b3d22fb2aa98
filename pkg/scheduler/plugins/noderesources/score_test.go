package noderesources

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// The cases and expected scores below are kube-scheduler's (its *_test.go for the same
// inputs), so berth scores nodes exactly as kube-scheduler does.

// pod has one container per request list, and no container without one (unlike MakePod,
// whose pods have a container that requests nothing).
func pod(reqs ...rl) *v1.Pod {
	w := st.MakePod().Name("incoming").Containers()
	for _, r := range reqs {
		w.ContainerReq(r)
	}
	return w.Obj()
}

// podOn is pod, bound to node.
func podOn(node string, reqs ...rl) *v1.Pod {
	p := pod(reqs...)
	p.Name, p.UID, p.Spec.NodeName = "", "", node
	return p
}

func node(name string, capacity rl) *v1.Node {
	return st.MakeNode().Name(name).Capacity(capacity).Obj()
}

// cm is cpu and memory.
func cm(cpu, mem string) rl { return rl{v1.ResourceCPU: cpu, v1.ResourceMemory: mem} }

// nodeInfos builds the snapshot's NodeInfos: each node with the pods bound to it.
func nodeInfos(nodes []*v1.Node, pods []*v1.Pod) []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for _, n := range nodes {
		var on []*v1.Pod
		for i, p := range pods {
			if p.Spec.NodeName == n.Name {
				p = p.DeepCopy()
				p.UID = types.UID(fmt.Sprintf("existing-%d", i))
				on = append(on, p)
			}
		}
		out = append(out, newNodeInfo(n, on...))
	}
	return out
}

type scorer interface {
	framework.PreScorePlugin
	framework.ScorePlugin
}

// scores runs PreScore (unless skipped) and Score for each node.
func scores(t *testing.T, p scorer, incoming *v1.Pod, infos []*framework.NodeInfo, preScore bool) []int64 {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if preScore {
		if s := p.PreScore(ctx, state, incoming, infos); !s.IsSuccess() {
			t.Fatalf("PreScore: %v", s)
		}
	}
	var out []int64
	for _, ni := range infos {
		score, s := p.Score(ctx, state, incoming, ni)
		if !s.IsSuccess() {
			t.Fatalf("Score: %v", s)
		}
		out = append(out, score)
	}
	return out
}

type scoreCase struct {
	name     string
	pod      *v1.Pod
	nodes    []*v1.Node
	existing []*v1.Pod
	// resources are the scored resources, cpu and memory (weight 1) when nil.
	resources []configv1.ResourceSpec
	want      []int64
}

func runScoreCases(t *testing.T, cases []scoreCase, build func(resources []configv1.ResourceSpec) runtime.Object, newPlugin framework.PluginFactory) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newPlugin(context.Background(), build(tc.resources), nil)
			if err != nil {
				t.Fatal(err)
			}
			infos := nodeInfos(tc.nodes, tc.existing)
			for _, preScore := range []bool{true, false} {
				if got := scores(t, p.(scorer), tc.pod, infos, preScore); diff(tc.want, got) != "" {
					t.Errorf("preScore=%v: scores %v, want %v", preScore, got, tc.want)
				}
			}
		})
	}
}

func strategyArgs(typ configv1.ScoringStrategyType, shape ...configv1.UtilizationShapePoint) func([]configv1.ResourceSpec) runtime.Object {
	return func(resources []configv1.ResourceSpec) runtime.Object {
		s := &configv1.ScoringStrategy{Type: typ, Resources: resources}
		if shape != nil {
			s.RequestedToCapacityRatio = &configv1.RequestedToCapacityRatioParam{Shape: shape}
		}
		return &configv1.NodeResourcesFitArgs{ScoringStrategy: s}
	}
}

const extRes = "abc.com/xyz"

var withExtended = []configv1.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}, {Name: extRes, Weight: 1}}

// Nodes and pods shared by the LeastAllocated and MostAllocated cases.
var (
	n4000   = node("node1", cm("4000", "10000"))
	n6000   = node("node2", cm("6000", "10000"))
	n4000b  = node("node2", cm("4000", "10000"))
	n10k20k = []*v1.Node{node("node1", cm("10000", "20000")), node("node2", cm("10000", "20000"))}
	twoCont = pod(cm("1000", "2000"), cm("2000", "3000"))
	extNode = []*v1.Node{node("node1", cm("6000", "10000")), node("node2", rl{"cpu": "6000", "memory": "10000", extRes: "4"})}
)

func TestLeastAllocated(t *testing.T) {
	runScoreCases(t, []scoreCase{
		{name: "nothing scheduled, nothing requested", pod: pod(), nodes: []*v1.Node{n4000, n4000b}, want: []int64{100, 100}},
		// cpu (4000-3000)/4000 = 25, memory 50: 37; cpu 50, memory 50: 50.
		{name: "nothing scheduled, differently sized nodes", pod: twoCont, nodes: []*v1.Node{n4000, n6000}, want: []int64{37, 50}},
		{name: "pods that request nothing count for nothing", pod: pod(), nodes: []*v1.Node{n4000, n4000b},
			existing: []*v1.Pod{podOn("node1"), podOn("node1"), podOn("node2"), podOn("node2")}, want: []int64{100, 100}},
		// node1: cpu 40, memory 100: 70; node2: cpu 40, memory 75: 57.
		{name: "no resources requested, pods scheduled with resources", pod: pod(), nodes: n10k20k,
			existing: []*v1.Pod{podOn("node1", cm("3000", "0")), podOn("node1", cm("3000", "0")), podOn("node2", cm("3000", "0")), podOn("node2", cm("3000", "5000"))},
			want:     []int64{70, 57}},
		{name: "resources requested, pods scheduled with resources", pod: twoCont, nodes: n10k20k,
			existing: []*v1.Pod{podOn("node1", cm("3000", "0")), podOn("node2", cm("3000", "5000"))}, want: []int64{57, 45}},
		{name: "resources requested, pods scheduled with resources, differently sized nodes", pod: twoCont,
			nodes:    []*v1.Node{node("node1", cm("10000", "20000")), node("node2", cm("10000", "50000"))},
			existing: []*v1.Pod{podOn("node1", cm("3000", "0")), podOn("node2", cm("3000", "5000"))}, want: []int64{57, 60}},
		// Over capacity scores 0 for that resource.
		{name: "requested resources exceed node capacity", pod: pod(cm("3000", "0")), nodes: []*v1.Node{n4000, n4000b},
			existing: []*v1.Pod{podOn("node1", cm("3000", "0")), podOn("node2", cm("3000", "5000"))}, want: []int64{50, 25}},
		{name: "zero node resources", pod: pod(), nodes: []*v1.Node{st.MakeNode().Name("node1").Obj(), st.MakeNode().Name("node2").Obj()},
			existing: []*v1.Pod{podOn("node1", cm("3000", "0")), podOn("node2", cm("3000", "5000"))}, want: []int64{0, 0}},
		// (25*1 + 50*2) / 3 = 41.
		{name: "memory weighs twice cpu", pod: twoCont, nodes: []*v1.Node{n4000, n6000},
			resources: []configv1.ResourceSpec{{Name: "memory", Weight: 2}, {Name: "cpu", Weight: 1}}, want: []int64{41, 50}},
		{name: "extended resource the pod does not request is not scored", pod: twoCont, nodes: extNode,
			resources: withExtended, want: []int64{50, 50}},
		// node1: (50 + 50 + 50) / 3; node2: (50 + 50 + 80) / 3.
		{name: "extended resource the pod requests is scored", pod: pod(rl{"cpu": "3000", "memory": "5000", extRes: "2"}),
			nodes:     []*v1.Node{node("node1", rl{"cpu": "6000", "memory": "10000", extRes: "4"}), node("node2", rl{"cpu": "6000", "memory": "10000", extRes: "10"})},
			resources: withExtended, want: []int64{50, 60}},
		{name: "a resource the node lacks is not scored", pod: pod(cm("3000", "4000")), nodes: extNode,
			resources: []configv1.ResourceSpec{{Name: extRes, Weight: 2}, {Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}, want: []int64{55, 55}},
	}, strategyArgs(configv1.LeastAllocated), New)
}

func TestMostAllocated(t *testing.T) {
	runScoreCases(t, []scoreCase{
		{name: "nothing scheduled, nothing requested", pod: pod(), nodes: []*v1.Node{n4000, n4000b}, want: []int64{0, 0}},
		{name: "nothing scheduled, differently sized nodes", pod: twoCont, nodes: []*v1.Node{n4000, n6000}, want: []int64{62, 50}},
		{name: "no resources requested, pods scheduled with resources", pod: pod(), nodes: n10k20k,
			existing: []*v1.Pod{podOn("node1", cm("3000", "0")), podOn("node1", cm("3000", "0")), podOn("node2", cm("3000", "0")), podOn("node2", cm("3000", "5000"))},
			want:     []int64{30, 42}},
		{name: "resources requested, pods scheduled with resources", pod: twoCont, nodes: n10k20k,
			existing: []*v1.Pod{podOn("node1", cm("3000", "0")), podOn("node2", cm("3000", "5000"))}, want: []int64{42, 55}},
		// node2's memory is overcommitted: it counts as full.
		{name: "resources requested equal node capacity", pod: pod(cm("2000", "4000"), cm("3000", "5000")),
			nodes: []*v1.Node{node("node1", cm("5000", "10000")), node("node2", cm("10000", "9000"))}, want: []int64{95, 75}},
		{name: "memory weighs twice cpu", pod: twoCont, nodes: []*v1.Node{n4000, n6000},
			resources: []configv1.ResourceSpec{{Name: "memory", Weight: 2}, {Name: "cpu", Weight: 1}}, want: []int64{58, 50}},
		// Containers that request nothing count as 100m and 200Mi: node1 has 300m/250m (100 %)
		// and 600Mi/1000Mi (60 %): 80; node2 40 % and 20 %: 30.
		{name: "no resources requested, pods scheduled, non-zero request for resource", pod: st.MakePod().Obj(),
			nodes:    []*v1.Node{node("node1", cm("250m", "1000Mi")), node("node2", cm("250m", "1000Mi"))},
			existing: []*v1.Pod{st.MakePod().Node("node1").Obj(), st.MakePod().Node("node1").Obj()}, want: []int64{80, 30}},
		{name: "extended resource the pod does not request is not scored", pod: twoCont, nodes: extNode,
			resources: withExtended, want: []int64{50, 50}},
		{name: "extended resource the pod requests is scored", pod: pod(rl{"cpu": "3000", "memory": "5000", extRes: "2"}),
			nodes:     []*v1.Node{node("node1", rl{"cpu": "6000", "memory": "10000", extRes: "4"}), node("node2", rl{"cpu": "6000", "memory": "10000", extRes: "10"})},
			resources: withExtended, want: []int64{50, 40}},
		{name: "a resource the node lacks is not scored", pod: pod(cm("3000", "4000")), nodes: extNode,
			resources: []configv1.ResourceSpec{{Name: extRes, Weight: 2}, {Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}, want: []int64{45, 45}},
	}, strategyArgs(configv1.MostAllocated), New)
}

// TestFitScoreStrategies are kube-scheduler's TestFitScore cases: one set of nodes, each
// strategy, with and without sidecars.
func TestFitScoreStrategies(t *testing.T) {
	nodes := []*v1.Node{n4000, n6000}
	existing := []*v1.Pod{podOn("node1", cm("2000", "4000")), podOn("node2", cm("1000", "2000"))}
	sameNodes := []*v1.Node{n4000, n4000b}
	sidecar := st.MakePod().Node("node1").Req(cm("1000", "2000")).SidecarReq(cm("1000", "2000")).Obj()
	withSidecar := []*v1.Pod{sidecar, podOn("node2", cm("1000", "2000"))}
	down := []configv1.UtilizationShapePoint{{Utilization: 0, Score: 10}, {Utilization: 100, Score: 0}}
	up := []configv1.UtilizationShapePoint{{Utilization: 0, Score: 0}, {Utilization: 100, Score: 10}}
	for _, tc := range []struct {
		name string
		args func([]configv1.ResourceSpec) runtime.Object
		c    scoreCase
	}{
		{"RequestedToCapacityRatio, falling", strategyArgs(configv1.RequestedToCapacityRatio, down...),
			scoreCase{pod: pod(cm("3000", "5000")), nodes: nodes, existing: existing, want: []int64{10, 32}}},
		{"RequestedToCapacityRatio, rising", strategyArgs(configv1.RequestedToCapacityRatio, up...),
			scoreCase{pod: pod(cm("3000", "5000")), nodes: nodes, existing: existing, want: []int64{95, 68}}},
		{"MostAllocated", strategyArgs(configv1.MostAllocated),
			scoreCase{pod: pod(cm("1000", "2000")), nodes: nodes, existing: existing, want: []int64{67, 36}}},
		{"LeastAllocated", strategyArgs(configv1.LeastAllocated),
			scoreCase{pod: pod(cm("1000", "2000")), nodes: nodes, existing: existing, want: []int64{32, 63}}},
		{"MostAllocated with a sidecar", strategyArgs(configv1.MostAllocated),
			scoreCase{pod: pod(cm("1000", "2000")), nodes: sameNodes, existing: withSidecar, want: []int64{67, 45}}},
		{"LeastAllocated with a sidecar", strategyArgs(configv1.LeastAllocated),
			scoreCase{pod: pod(cm("1000", "2000")), nodes: sameNodes, existing: withSidecar, want: []int64{32, 55}}},
	} {
		tc.c.name = tc.name
		runScoreCases(t, []scoreCase{tc.c}, tc.args, New)
	}
}

func TestRequestedToCapacityRatio(t *testing.T) {
	down := strategyArgs(configv1.RequestedToCapacityRatio, configv1.UtilizationShapePoint{Utilization: 0, Score: 10}, configv1.UtilizationShapePoint{Utilization: 100, Score: 0})
	runScoreCases(t, []scoreCase{
		// Memory: 3 × 200Mi on 10000 bytes is over capacity and scores 0, so only cpu counts.
		{name: "nothing requested", pod: pod(), nodes: []*v1.Node{n4000, n4000b},
			existing: []*v1.Pod{podOn("node1"), podOn("node1")}, want: []int64{100, 100}},
		{name: "resources requested, differently sized nodes", pod: twoCont, nodes: []*v1.Node{n4000, n6000},
			existing: []*v1.Pod{podOn("node1"), podOn("node1")}, want: []int64{38, 50}},
		{name: "no resources requested, pods scheduled with resources", pod: pod(), nodes: []*v1.Node{n4000, n6000},
			existing: []*v1.Pod{podOn("node1", cm("3000", "5000")), podOn("node2", cm("3000", "5000"))}, want: []int64{38, 50}},
	}, down, New)

	rising := strategyArgs(configv1.RequestedToCapacityRatio, configv1.UtilizationShapePoint{Utilization: 0, Score: 0}, configv1.UtilizationShapePoint{Utilization: 100, Score: 1})
	foo, bar := v1.ResourceName("intel.com/foo"), v1.ResourceName("intel.com/bar")
	gpuNode := func(name string, ext rl) *v1.Node {
		c := rl{v1.ResourceCPU: "4000m", v1.ResourceMemory: "10000Mi"}
		for k, v := range ext {
			c[k] = v
		}
		return node(name, c)
	}
	single := []*v1.Node{gpuNode("node1", rl{foo: "8"}), gpuNode("node2", rl{foo: "4"})}
	onlyFoo := []configv1.ResourceSpec{{Name: string(foo), Weight: 1}}
	runScoreCases(t, []scoreCase{
		{name: "one extended resource, nothing requested", pod: pod(), nodes: single, resources: onlyFoo, want: []int64{0, 0}},
		// 2/8 = 25 % scores 10 × 25/100 = 2; 2/4 = 50 % scores 5.
		{name: "one extended resource requested", pod: pod(rl{foo: "2"}), nodes: single, resources: onlyFoo, want: []int64{2, 5}},
		{name: "one extended resource, node2 in use", pod: pod(rl{foo: "2"}), nodes: single, resources: onlyFoo,
			existing: []*v1.Pod{podOn("node2", rl{foo: "2"})}, want: []int64{2, 10}},
		{name: "one extended resource, larger request", pod: pod(rl{foo: "4"}), nodes: single, resources: onlyFoo, want: []int64{5, 10}},
	}, rising, New)

	multi := []*v1.Node{gpuNode("node1", rl{foo: "8", bar: "4"}), gpuNode("node2", rl{foo: "4", bar: "8"})}
	fooBar := []configv1.ResourceSpec{{Name: string(foo), Weight: 3}, {Name: string(bar), Weight: 5}}
	runScoreCases(t, []scoreCase{
		{name: "two extended resources, nothing requested", pod: pod(), nodes: multi, resources: fooBar, want: []int64{0, 0}},
		// node1: (2×3 + 5×5) / 8 = 3.875 → 4; node2: (5×3 + 2×5) / 8 = 3.125 → 3.
		{name: "two extended resources requested", pod: pod(rl{foo: "2", bar: "2"}), nodes: multi, resources: fooBar, want: []int64{4, 3}},
		{name: "two extended resources, node2 in use", pod: pod(rl{foo: "2", bar: "2"}), nodes: multi, resources: fooBar,
			existing: []*v1.Pod{podOn("node2", rl{foo: "4", bar: "2"})}, want: []int64{4, 7}},
		{name: "two extended resources, larger request", pod: pod(rl{foo: "4", bar: "2"}), nodes: multi, resources: fooBar, want: []int64{5, 5}},
	}, rising, New)
}

func TestShapeScore(t *testing.T) {
	for _, tc := range []struct {
		shape []shapePoint
		want  map[int64]int64 // utilization → score
	}{
		{[]shapePoint{{10, 1}, {90, 9}}, map[int64]int64{-10: 1, 0: 1, 9: 1, 10: 1, 15: 1, 19: 1, 20: 2, 89: 8, 90: 9, 99: 9, 100: 9, 110: 9}},
		{[]shapePoint{{0, 2}, {40, 10}, {100, 0}}, map[int64]int64{-10: 2, 0: 2, 20: 6, 30: 8, 40: 10, 70: 5, 100: 0, 110: 0}},
		{[]shapePoint{{0, 2}, {40, 2}, {100, 2}}, map[int64]int64{-10: 2, 0: 2, 20: 2, 70: 2, 100: 2, 110: 2}},
	} {
		for u, want := range tc.want {
			if got := shapeScore(tc.shape, u); got != want {
				t.Errorf("shape %v at %d: %d, want %d", tc.shape, u, got, want)
			}
		}
	}
}

func TestBalancedAllocation(t *testing.T) {
	cpuOnly := func(cpu string) rl { return rl{v1.ResourceCPU: cpu} }
	nodeM := func(name string, milliCPU, mem string, ext rl) *v1.Node {
		c := rl{v1.ResourceCPU: milliCPU + "m", v1.ResourceMemory: mem}
		for k, v := range ext {
			c[k] = v
		}
		return node(name, c)
	}
	two := pod(cm("1000m", "2000"), cm("2000m", "3000"))
	withGPU := []configv1.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}, {Name: "nvidia.com/gpu", Weight: 1}}
	args := func(resources []configv1.ResourceSpec) runtime.Object {
		return &configv1.NodeResourcesBalancedAllocationArgs{Resources: resources}
	}
	runScoreCases(t, []scoreCase{
		// node1: cpu 0→75 %, memory 0→50 %: balance 100 → 87, score 50 + (50 + 87 - 100)/2 = 68.
		// node2: 50 % and 50 %: 100 → 100, score 75.
		{name: "nothing scheduled, differently sized nodes", pod: two,
			nodes: []*v1.Node{nodeM("node1", "4000", "10000", nil), nodeM("node2", "6000", "10000", nil)}, want: []int64{68, 75}},
		{name: "pods scheduled with resources", pod: two,
			nodes:    []*v1.Node{nodeM("node1", "10000", "20000", nil), nodeM("node2", "10000", "20000", nil)},
			existing: []*v1.Pod{podOn("node1", cpuOnly("1000m"), cpuOnly("2000m")), podOn("node2", cm("1000m", "2000"), cm("2000m", "3000"))},
			want:     []int64{73, 74}},
		{name: "pods scheduled with resources, differently sized nodes", pod: two,
			nodes:    []*v1.Node{nodeM("node1", "10000", "20000", nil), nodeM("node2", "10000", "50000", nil)},
			existing: []*v1.Pod{podOn("node1", cpuOnly("1000m"), cpuOnly("2000m")), podOn("node2", cm("1000m", "2000"), cm("2000m", "3000"))},
			want:     []int64{73, 70}},
		// node1 goes from cpu 100 %, memory 0 % to both full: 50 → 100, score 100; node2 from
		// balanced to memory full: 100 → 50, score 50.
		{name: "nodes reach min and max score", pod: pod(rl{v1.ResourceMemory: "2000"}, rl{v1.ResourceMemory: "3000"}),
			nodes:    []*v1.Node{nodeM("node1", "3000", "5000", nil), nodeM("node2", "3000", "5000", nil)},
			existing: []*v1.Pod{podOn("node1", cpuOnly("1000m"), cpuOnly("2000m"))},
			want:     []int64{100, 50}},
		// Fractions are capped at 1.
		{name: "requested resources at node capacity", pod: pod(cpuOnly("1000m"), cpuOnly("2000m")),
			nodes:    []*v1.Node{nodeM("node1", "6000", "10000", nil), nodeM("node2", "6000", "10000", nil)},
			existing: []*v1.Pod{podOn("node1", cpuOnly("1000m"), cpuOnly("2000m")), podOn("node2", cm("1000m", "2000"), cm("2000m", "3000"))},
			want:     []int64{62, 62}},
		// Three fractions: the standard deviation proper.
		{name: "a scalar resource the pod requests is scored", pod: pod(rl{v1.ResourceCPU: "0", v1.ResourceMemory: "0", "nvidia.com/gpu": "1"}),
			nodes:     []*v1.Node{nodeM("node1", "3500", "40000", rl{"nvidia.com/gpu": "8"}), nodeM("node2", "3500", "40000", rl{"nvidia.com/gpu": "8"})},
			existing:  []*v1.Pod{podOn("node1", cm("1000m", "2000"), rl{v1.ResourceCPU: "2000m", v1.ResourceMemory: "3000", "nvidia.com/gpu": "3"}), podOn("node2", cm("1000m", "2000"), cm("2000m", "3000"))},
			resources: withGPU, want: []int64{75, 76}},
		{name: "a scalar resource the pod does not request is not scored", pod: two,
			nodes:     []*v1.Node{nodeM("node1", "3500", "40000", rl{"nvidia.com/gpu": "8"}), nodeM("node2", "3500", "40000", nil)},
			resources: withGPU, want: []int64{56, 56}},
	}, args, NewBalancedAllocation)
}

func TestBalancedAllocationSkipsPodsRequestingNothing(t *testing.T) {
	p, err := NewBalancedAllocation(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ba := p.(*BalancedAllocation)
	infos := nodeInfos([]*v1.Node{node("node1", cm("4", "10Gi"))}, nil)
	state := framework.NewCycleState()
	if s := ba.PreScore(context.Background(), state, st.MakePod().Obj(), infos); !s.IsSkip() {
		t.Errorf("PreScore %v, want Skip", s)
	}
	if score, s := ba.Score(context.Background(), state, st.MakePod().Obj(), infos[0]); score != 0 || !s.IsSuccess() {
		t.Errorf("Score %d %v, want 0", score, s)
	}
}

func TestBalance(t *testing.T) {
	for _, tc := range []struct {
		used, allocatable []int64
		want              int64
	}{
		{[]int64{0, 0}, []int64{10, 10}, 100},
		{[]int64{10, 0}, []int64{10, 10}, 50},    // |1 - 0| / 2 = 0.5
		{[]int64{30, 0}, []int64{10, 10}, 50},    // capped at 1
		{[]int64{5, 7}, []int64{10, 0}, 100},     // one fraction: no deviation
		{[]int64{3, 1, 2}, []int64{4, 8, 8}, 72}, // 0.75, 0.125, 0.25: std 0.27
	} {
		if got := balance(tc.used, tc.allocatable); got != tc.want {
			t.Errorf("balance(%v, %v) = %d, want %d", tc.used, tc.allocatable, got, tc.want)
		}
	}
}

func TestScoreAllocations(t *testing.T) {
	ctx := context.Background()
	incoming := pod(cm("1", "1Gi"))
	infos := nodeInfos([]*v1.Node{node("node1", cm("4", "10Gi"))}, []*v1.Pod{podOn("node1", cm("1", "1Gi"))})
	fit, _ := New(ctx, nil, nil)
	ba, _ := NewBalancedAllocation(ctx, nil, nil)
	for _, p := range []scorer{fit.(scorer), ba.(scorer)} {
		state := framework.NewCycleState()
		p.PreScore(ctx, state, incoming, infos)
		if got := testing.AllocsPerRun(100, func() { p.Score(ctx, state, incoming, infos[0]) }); got != 0 {
			t.Errorf("%s: %v allocations per Score, want 0", p.Name(), got)
		}
	}
}
