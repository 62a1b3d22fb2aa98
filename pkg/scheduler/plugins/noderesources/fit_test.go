package noderesources

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

type rl = map[v1.ResourceName]string

const (
	resA       = v1.ResourceName("example.com/aaa")
	resB       = v1.ResourceName("example.com/bbb")
	k8sIOResA  = v1.ResourceName("kubernetes.io/something")
	k8sIOResB  = v1.ResourceName("subdomain.kubernetes.io/something")
	hugePagesA = v1.ResourceName(v1.ResourceHugePagesPrefix + "2Mi")
)

// diff is empty when want and got are deeply equal, and shows both otherwise.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("want %+v\n got %+v", want, got)
}

// newNodeInfo is the node with its pods, as the snapshot would hold it.
func newNodeInfo(node *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

// used is a pod already on the node that requests this much.
func used(reqs rl) *v1.Pod { return st.MakePod().Name("existing").Req(reqs).Obj() }

func newFit(t testing.TB, args *configv1.NodeResourcesFitArgs) *Fit {
	t.Helper()
	p, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p.(*Fit)
}

func runFilter(t *testing.T, f *Fit, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	t.Helper()
	state := framework.NewCycleState()
	if _, s := f.PreFilter(context.Background(), state, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	return f.Filter(context.Background(), state, pod, ni)
}

// The node of most cases: 10m cpu, 20 bytes of memory, 20 of ephemeral storage, 32 pods,
// 5 example.com/aaa and 5 bytes of 2Mi hugepages (the numbers of kube-scheduler's tests).
func filterNode() *v1.Node {
	return st.MakeNode().Name("n").Capacity(rl{
		v1.ResourceCPU: "10m", v1.ResourceMemory: "20", v1.ResourcePods: "32",
		resA: "5", v1.ResourceEphemeralStorage: "20", hugePagesA: "5",
	}).Obj()
}

func TestFilter(t *testing.T) {
	cpuMem := func(cpu, mem string) rl { return rl{v1.ResourceCPU: cpu, v1.ResourceMemory: mem} }
	unsched, unresolvable := framework.Unschedulable, framework.UnschedulableAndUnresolvable
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node // filterNode() when nil
		existing []*v1.Pod
		args     *configv1.NodeResourcesFitArgs
		wantCode framework.Code
		// wantReasons are Filter's; wantInsufficient is Fits' (which ignores nothing), checked
		// when given or when the pod fits, and args is nil.
		wantReasons      []string
		wantInsufficient []InsufficientResource
	}{
		{
			name:     "no resources requested always fits",
			pod:      st.MakePod().Obj(),
			existing: []*v1.Pod{used(cpuMem("10m", "20"))},
		},
		{
			name:        "too many resources fails",
			pod:         st.MakePod().Req(cpuMem("1m", "1")).Obj(),
			existing:    []*v1.Pod{used(cpuMem("10m", "20"))},
			wantCode:    unsched,
			wantReasons: []string{"Insufficient cpu", "Insufficient memory"},
			wantInsufficient: []InsufficientResource{
				{ResourceName: v1.ResourceCPU, Reason: "Insufficient cpu", Requested: 1, Used: 10, Capacity: 10},
				{ResourceName: v1.ResourceMemory, Reason: "Insufficient memory", Requested: 1, Used: 20, Capacity: 20},
			},
		},
		{
			name:             "init container larger than the app containers fails on cpu",
			pod:              st.MakePod().Req(cpuMem("1m", "1")).InitReq(cpuMem("3m", "1")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("8m", "19"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient cpu"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceCPU, Reason: "Insufficient cpu", Requested: 3, Used: 8, Capacity: 10}},
		},
		{
			name:             "the largest init container counts",
			pod:              st.MakePod().Req(cpuMem("1m", "1")).InitReq(cpuMem("3m", "1")).InitReq(cpuMem("2m", "1")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("8m", "19"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient cpu"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceCPU, Reason: "Insufficient cpu", Requested: 3, Used: 8, Capacity: 10}},
		},
		{
			name:             "init container larger than the app containers fails on memory",
			pod:              st.MakePod().Req(cpuMem("1m", "1")).InitReq(cpuMem("1m", "3")).InitReq(cpuMem("1m", "2")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("9m", "19"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient memory"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceMemory, Reason: "Insufficient memory", Requested: 3, Used: 19, Capacity: 20}},
		},
		{
			name:     "init containers fit: the max, not the sum, of init and app containers",
			pod:      st.MakePod().Req(cpuMem("1m", "1")).InitReq(cpuMem("1m", "1")).InitReq(cpuMem("1m", "1")).Obj(),
			existing: []*v1.Pod{used(cpuMem("9m", "19"))},
		},
		{
			name:     "both resources fit",
			pod:      st.MakePod().Req(cpuMem("1m", "1")).Obj(),
			existing: []*v1.Pod{used(cpuMem("5m", "5"))},
		},
		{
			name:             "memory fits, cpu does not",
			pod:              st.MakePod().Req(cpuMem("2m", "1")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("9m", "5"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient cpu"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceCPU, Reason: "Insufficient cpu", Requested: 2, Used: 9, Capacity: 10}},
		},
		{
			name:     "exactly full fits",
			pod:      st.MakePod().Req(cpuMem("5m", "1")).Obj(),
			existing: []*v1.Pod{used(cpuMem("5m", "19"))},
		},
		{
			name:     "exactly full by the init container fits",
			pod:      st.MakePod().Req(cpuMem("4m", "1")).InitReq(cpuMem("5m", "1")).Obj(),
			existing: []*v1.Pod{used(cpuMem("5m", "19"))},
		},
		{
			name:             "sidecars add to the app containers",
			pod:              st.MakePod().Req(cpuMem("1m", "1")).SidecarReq(cpuMem("2m", "1")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("8m", "5"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient cpu"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceCPU, Reason: "Insufficient cpu", Requested: 3, Used: 8, Capacity: 10}},
		},
		{
			name:             "sidecar plus app containers larger than the node is unresolvable",
			pod:              st.MakePod().Req(rl{v1.ResourceCPU: "1m"}).SidecarReq(rl{v1.ResourceCPU: "2m"}).Obj(),
			node:             st.MakeNode().Name("n").Capacity(rl{v1.ResourceCPU: "2m", v1.ResourcePods: "1"}).Obj(),
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient cpu"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceCPU, Reason: "Insufficient cpu", Requested: 3, Used: 0, Capacity: 2, Unresolvable: true}},
		},
		{
			name:     "sidecar plus app containers within the node fits",
			pod:      st.MakePod().Req(rl{v1.ResourceCPU: "1m"}).SidecarReq(rl{v1.ResourceCPU: "1m"}).Obj(),
			node:     st.MakeNode().Name("n").Capacity(rl{v1.ResourceCPU: "2m", v1.ResourcePods: "1"}).Obj(),
			existing: nil,
		},
		{
			name:     "pod overhead included and fits",
			pod:      st.MakePod().Req(cpuMem("1m", "1")).Overhead(cpuMem("3m", "13")).Obj(),
			existing: []*v1.Pod{used(cpuMem("5m", "5"))},
		},
		{
			name:             "requests plus overhead do not fit in memory",
			pod:              st.MakePod().Req(cpuMem("1m", "1")).Overhead(cpuMem("1m", "15")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("5m", "5"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient memory"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceMemory, Reason: "Insufficient memory", Requested: 16, Used: 5, Capacity: 20}},
		},
		{
			name:     "pod-level requests fit",
			pod:      st.MakePod().Req(cpuMem("1m", "1")).PodLevelReq(cpuMem("1m", "2")).Obj(),
			existing: []*v1.Pod{used(cpuMem("5m", "5"))},
		},
		{
			name:             "pod-level cpu request does not fit",
			pod:              st.MakePod().Req(cpuMem("1m", "1")).PodLevelReq(cpuMem("7m", "2")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("5m", "5"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient cpu"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceCPU, Reason: "Insufficient cpu", Requested: 7, Used: 5, Capacity: 10}},
		},
		{
			name:             "pod-level memory request wins over init containers",
			pod:              st.MakePod().Req(cpuMem("1m", "1")).InitReq(cpuMem("1m", "1")).PodLevelReq(cpuMem("3m", "2")).Obj(),
			existing:         []*v1.Pod{used(cpuMem("5m", "19"))},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient memory"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceMemory, Reason: "Insufficient memory", Requested: 2, Used: 19, Capacity: 20}},
		},
		{
			name:             "pod-level hugepages beyond the node are unresolvable",
			pod:              st.MakePod().PodLevelReq(rl{v1.ResourceCPU: "3m", v1.ResourceMemory: "2", hugePagesA: "10"}).Obj(),
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient hugepages-2Mi"},
			wantInsufficient: []InsufficientResource{{ResourceName: hugePagesA, Reason: "Insufficient hugepages-2Mi", Requested: 10, Capacity: 5, Unresolvable: true}},
		},
		{
			name: "extended resource fits",
			pod:  st.MakePod().Req(rl{resA: "1"}).Obj(),
		},
		{
			name: "extended resource of an init container fits",
			pod:  st.MakePod().InitReq(rl{resA: "1"}).Obj(),
		},
		{
			name:             "extended resource beyond the node's capacity is unresolvable",
			pod:              st.MakePod().Req(rl{v1.ResourceCPU: "1m", v1.ResourceMemory: "1", resA: "10"}).Obj(),
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient example.com/aaa"},
			wantInsufficient: []InsufficientResource{{ResourceName: resA, Reason: "Insufficient example.com/aaa", Requested: 10, Capacity: 5, Unresolvable: true}},
		},
		{
			name:             "extended resource in use by other pods",
			pod:              st.MakePod().Req(rl{resA: "1"}).Obj(),
			existing:         []*v1.Pod{used(rl{resA: "5"})},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient example.com/aaa"},
			wantInsufficient: []InsufficientResource{{ResourceName: resA, Reason: "Insufficient example.com/aaa", Requested: 1, Used: 5, Capacity: 5}},
		},
		{
			name:             "extended resource summed over app containers",
			pod:              st.MakePod().Req(rl{resA: "3"}).ContainerReq(rl{resA: "3"}).Obj(),
			existing:         []*v1.Pod{used(rl{resA: "2"})},
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient example.com/aaa"},
			wantInsufficient: []InsufficientResource{{ResourceName: resA, Reason: "Insufficient example.com/aaa", Requested: 6, Used: 2, Capacity: 5, Unresolvable: true}},
		},
		{
			name:     "extended resource of init containers is the max, not the sum",
			pod:      st.MakePod().InitReq(rl{resA: "3"}).InitReq(rl{resA: "3"}).Obj(),
			existing: []*v1.Pod{used(rl{resA: "2"})},
		},
		{
			name:             "extended resource the node lacks entirely",
			pod:              st.MakePod().Req(rl{resB: "1"}).Obj(),
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient example.com/bbb"},
			wantInsufficient: []InsufficientResource{{ResourceName: resB, Reason: "Insufficient example.com/bbb", Requested: 1, Unresolvable: true}},
		},
		{
			name:             "kubernetes.io resource is enforced",
			pod:              st.MakePod().InitReq(rl{k8sIOResB: "10"}).Obj(),
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient subdomain.kubernetes.io/something"},
			wantInsufficient: []InsufficientResource{{ResourceName: k8sIOResB, Reason: "Insufficient subdomain.kubernetes.io/something", Requested: 10, Unresolvable: true}},
		},
		{
			name:             "hugepages summed over app containers",
			pod:              st.MakePod().Req(rl{hugePagesA: "3"}).ContainerReq(rl{hugePagesA: "3"}).Obj(),
			existing:         []*v1.Pod{used(rl{hugePagesA: "2"})},
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient hugepages-2Mi"},
			wantInsufficient: []InsufficientResource{{ResourceName: hugePagesA, Reason: "Insufficient hugepages-2Mi", Requested: 6, Used: 2, Capacity: 5, Unresolvable: true}},
		},
		{
			name: "zero request of an exhausted extended resource fits",
			pod:  st.MakePod().Req(rl{v1.ResourceCPU: "1m", resA: "0"}).Obj(),
			existing: []*v1.Pod{
				used(rl{resA: "6"}),
			},
		},
		{
			name: "ignored extended resource is not checked",
			pod:  st.MakePod().Req(rl{v1.ResourceCPU: "1m", resB: "1"}).Obj(),
			args: &configv1.NodeResourcesFitArgs{IgnoredResources: []string{"example.com/bbb"}},
		},
		{
			name:        "ignored resource groups cover extended resources only",
			pod:         st.MakePod().Req(rl{resB: "1", k8sIOResA: "1"}).Obj(),
			args:        &configv1.NodeResourcesFitArgs{IgnoredResourceGroups: []string{"example.com", "kubernetes.io"}},
			wantCode:    unresolvable,
			wantReasons: []string{"Insufficient kubernetes.io/something"},
		},
		{
			name:        "hugepages cannot be ignored",
			pod:         st.MakePod().Req(rl{hugePagesA: "6"}).Obj(),
			args:        &configv1.NodeResourcesFitArgs{IgnoredResources: []string{"hugepages-2Mi"}},
			wantCode:    unresolvable,
			wantReasons: []string{"Insufficient hugepages-2Mi"},
		},
		{
			name:             "ephemeral storage beyond the node is unresolvable",
			pod:              st.MakePod().Req(rl{v1.ResourceEphemeralStorage: "25"}).Obj(),
			existing:         []*v1.Pod{used(cpuMem("2m", "2"))},
			wantCode:         unresolvable,
			wantReasons:      []string{"Insufficient ephemeral-storage"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceEphemeralStorage, Reason: "Insufficient ephemeral-storage", Requested: 25, Capacity: 20, Unresolvable: true}},
		},
		{
			name:     "ephemeral storage is sufficient",
			pod:      st.MakePod().InitReq(rl{v1.ResourceEphemeralStorage: "5"}).Obj(),
			existing: []*v1.Pod{used(rl{v1.ResourceEphemeralStorage: "10"})},
		},
		{
			name:             "ephemeral storage in use by other pods",
			pod:              st.MakePod().Req(rl{v1.ResourceEphemeralStorage: "15"}).Obj(),
			existing:         []*v1.Pod{used(rl{v1.ResourceEphemeralStorage: "10"})},
			wantCode:         unsched,
			wantReasons:      []string{"Insufficient ephemeral-storage"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourceEphemeralStorage, Reason: "Insufficient ephemeral-storage", Requested: 15, Used: 10, Capacity: 20}},
		},
		{
			name:             "no room for another pod, even without requests",
			pod:              st.MakePod().Obj(),
			node:             st.MakeNode().Name("n").Capacity(rl{v1.ResourceCPU: "10m", v1.ResourceMemory: "20", v1.ResourcePods: "1"}).Obj(),
			existing:         []*v1.Pod{used(cpuMem("10m", "20"))},
			wantCode:         unsched,
			wantReasons:      []string{"Too many pods"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourcePods, Reason: "Too many pods", Requested: 1, Used: 1, Capacity: 1}},
		},
		{
			name:        "no room for another pod, though exactly full resources fit",
			pod:         st.MakePod().Req(cpuMem("5m", "1")).InitReq(cpuMem("5m", "1")).Obj(),
			node:        st.MakeNode().Name("n").Capacity(rl{v1.ResourceCPU: "10m", v1.ResourceMemory: "20", v1.ResourcePods: "1"}).Obj(),
			existing:    []*v1.Pod{used(cpuMem("5m", "19"))},
			wantCode:    unsched,
			wantReasons: []string{"Too many pods"},
		},
		{
			name:     "a node without pods capacity takes no pod",
			pod:      st.MakePod().Obj(),
			node:     st.MakeNode().Name("n").Capacity(rl{v1.ResourceCPU: "10m"}).Obj(),
			wantCode: unsched, wantReasons: []string{"Too many pods"},
			wantInsufficient: []InsufficientResource{{ResourceName: v1.ResourcePods, Reason: "Too many pods", Requested: 1}},
		},
		{
			name:        "every reason, in order; one unresolvable makes all unresolvable",
			pod:         st.MakePod().Req(rl{v1.ResourceCPU: "1m", v1.ResourceMemory: "1", v1.ResourceEphemeralStorage: "1", resB: "1", resA: "1"}).Obj(),
			node:        st.MakeNode().Name("n").Capacity(rl{v1.ResourceCPU: "10m", v1.ResourceMemory: "20", v1.ResourceEphemeralStorage: "20", v1.ResourcePods: "1", resA: "1"}).Obj(),
			existing:    []*v1.Pod{used(rl{v1.ResourceCPU: "10m", v1.ResourceMemory: "20", v1.ResourceEphemeralStorage: "20", resA: "1"})},
			wantCode:    unresolvable,
			wantReasons: []string{"Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage", "Insufficient example.com/aaa", "Insufficient example.com/bbb"},
		},
		{
			name:        "more extended resources than the reason table holds",
			pod:         st.MakePod().Req(rl{"example.com/r4": "1", "example.com/r2": "1", "example.com/r3": "1", "example.com/r1": "1", v1.ResourceCPU: "11m"}).Obj(),
			wantCode:    unresolvable,
			wantReasons: []string{"Insufficient cpu", "Insufficient example.com/r1", "Insufficient example.com/r2", "Insufficient example.com/r3", "Insufficient example.com/r4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			if node == nil {
				node = filterNode()
			}
			ni := newNodeInfo(node, tc.existing...)
			got := runFilter(t, newFit(t, tc.args), tc.pod, ni)
			if got.Code() != tc.wantCode {
				t.Errorf("code %v, want %v (%v)", got.Code(), tc.wantCode, got)
			}
			if d := diff(tc.wantReasons, got.Reasons()); d != "" {
				t.Errorf("reasons:\n%s", d)
			}
			if tc.args != nil || (tc.wantInsufficient == nil && tc.wantCode != framework.Success) {
				return
			}
			if d := diff(tc.wantInsufficient, Fits(tc.pod, ni)); d != "" {
				t.Errorf("Fits:\n%s", d)
			}
		})
	}
}

func TestFilterWithoutPreFilter(t *testing.T) {
	f := newFit(t, nil)
	got := f.Filter(context.Background(), framework.NewCycleState(), st.MakePod().Obj(), newNodeInfo(filterNode()))
	if got.Code() != framework.Error || got.Message() != `error reading "PreFilterNodeResourcesFit" from cycleState: not found` {
		t.Errorf("got %v", got)
	}
}

// The fixed reason lists are shared between statuses; appending to one must not change
// another.
func TestSharedReasonsAreNotOverwritten(t *testing.T) {
	f := newFit(t, nil)
	pod := st.MakePod().Req(rl{v1.ResourceCPU: "20m"}).Obj()
	ni := newNodeInfo(filterNode())
	first := runFilter(t, f, pod, ni)
	first.AppendReason("extra")
	second := runFilter(t, f, pod, ni)
	if d := diff([]string{"Insufficient cpu"}, second.Reasons()); d != "" {
		t.Errorf("reasons:\n%s", d)
	}
}

func TestFilterAllocations(t *testing.T) {
	f := newFit(t, nil)
	ctx := context.Background()
	ni := newNodeInfo(filterNode(), used(rl{v1.ResourceCPU: "5m"}))
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want float64
	}{
		{"fits", st.MakePod().Req(rl{v1.ResourceCPU: "1m", resA: "1"}).Obj(), 0},
		{"does not fit", st.MakePod().Req(rl{v1.ResourceCPU: "6m", v1.ResourceMemory: "21"}).Obj(), 1},
		{"lacks an extended resource", st.MakePod().Req(rl{v1.ResourceCPU: "6m", resA: "1", resB: "1"}).Obj(), 1},
	} {
		state := framework.NewCycleState()
		f.PreFilter(ctx, state, tc.pod, nil)
		if got := testing.AllocsPerRun(100, func() { f.Filter(ctx, state, tc.pod, ni) }); got != tc.want {
			t.Errorf("%s: %v allocations per Filter, want %v", tc.name, got, tc.want)
		}
	}
}
