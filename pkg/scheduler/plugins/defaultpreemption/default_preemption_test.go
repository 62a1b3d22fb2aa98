package defaultpreemption

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

type res = map[v1.ResourceName]string

func node(name, cpu string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: cpu, v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj()
}

// pod is a pod on nodeName ("" for none) with a priority and a cpu request.
func pod(name, nodeName string, priority int32, cpu string) *st.PodWrapper {
	return st.MakePod().Name(name).Node(nodeName).Priority(priority).Req(res{v1.ResourceCPU: cpu})
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(minutes int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)) }

// env is a plugin over a snapshot of nodes and pods, with the pods in a fake clientset.
type env struct {
	pl       *Plugin
	h        *fakeHandle
	cs       *fake.Clientset
	recorder *events.FakeRecorder
}

type scenario struct {
	nodes     []*v1.Node
	pods      []*v1.Pod // bound pods, in the snapshot
	nominated []*v1.Pod // pods nominated to a node (status.nominatedNodeName), not in the snapshot
	waiting   []*v1.Pod // pods of the snapshot held at Permit
	args      *configv1.DefaultPreemptionArgs
	parallel  bool
}

func newEnv(t *testing.T, s scenario, preemptor *v1.Pod) *env {
	t.Helper()
	objs := []runtime.Object{preemptor}
	for _, p := range append(slices.Clone(s.pods), s.nominated...) {
		objs = append(objs, p)
	}
	cs := fake.NewClientset(objs...)
	nominator := &fakeNominator{byNode: map[string][]*framework.PodInfo{}}
	for _, p := range s.nominated {
		nominator.byNode[p.Status.NominatedNodeName] = append(nominator.byNode[p.Status.NominatedNodeName], framework.NewPodInfo(p))
	}
	waiting := &fakeWaitingPods{pods: map[types.UID]*fakeWaitingPod{}}
	for _, p := range s.waiting {
		waiting.pods[p.UID] = &fakeWaitingPod{pod: p}
	}
	recorder := events.NewFakeRecorder(100)
	h := &fakeHandle{
		lister:    newLister(s.nodes, s.pods),
		cs:        cs,
		recorder:  recorder,
		runner:    &fakeRunner{nominator: nominator},
		nominator: nominator,
		waiting:   waiting,
		parallel:  s.parallel,
	}
	var args runtime.Object
	if s.args != nil {
		args = s.args
	}
	pl, err := New(context.Background(), args, h)
	if err != nil {
		t.Fatal(err)
	}
	return &env{pl: pl.(*Plugin), h: h, cs: cs, recorder: recorder}
}

// deleted lists the pods deleted through the API, sorted.
func (e *env) deleted() []string {
	var out []string
	for _, a := range e.cs.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			out = append(out, a.(clienttesting.DeleteAction).GetName())
		}
	}
	sort.Strings(out)
	return out
}

// statusPatches are the pods/status patches by pod name.
func (e *env) statusPatches() map[string][]byte {
	out := map[string][]byte{}
	for _, a := range e.cs.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetSubresource() == "status" {
			out[p.GetName()] = p.GetPatch()
		}
	}
	return out
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			sort.Strings(out)
			return out
		}
	}
}

// unschedulable says Filter found every node Unschedulable ("Insufficient cpu").
func unschedulable(nodes []*v1.Node) fakeStatuses {
	m := fakeStatuses{}
	for _, n := range nodes {
		m[n.Name] = framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
	}
	return m
}

func TestPostFilter(t *testing.T) {
	getOffsetRand = func(int32) int32 { return 0 }
	one := []*v1.Node{node("n1", "4")}
	two := []*v1.Node{node("n1", "4"), node("n2", "4")}
	terminating := pod("old-victim", "n1", 1, "2").Terminating().Condition(v1.DisruptionTarget, v1.PodReasonPreemptionByScheduler).Obj()

	tests := []struct {
		name      string
		scenario  scenario
		preemptor *v1.Pod
		// statuses is Filter's verdict; nil means every node Unschedulable.
		statuses    fakeStatuses
		wantResult  *framework.NominatingInfo // nil: no PostFilterResult
		wantCode    framework.Code
		wantMsg     string
		wantDeleted []string
	}{
		{
			name: "a high-priority pod on a full node evicts the lowest-priority pod only",
			scenario: scenario{nodes: one, pods: []*v1.Pod{
				pod("mid", "n1", 5, "2").Obj(), pod("low", "n1", 1, "2").Obj(),
			}},
			preemptor:   pod("p", "", 10, "2").Obj(),
			wantResult:  &framework.NominatingInfo{NominatedNodeName: "n1", NominatingMode: framework.ModeOverride},
			wantCode:    framework.Success,
			wantMsg:     "preemption: found a potential placement for pod on node n1, preempting 1 victims",
			wantDeleted: []string{"low"},
		},
		{
			name: "victims not needed are reprieved, the most important first",
			scenario: scenario{nodes: one, pods: []*v1.Pod{
				pod("a", "n1", 1, "1").Obj(), pod("b", "n1", 2, "1").Obj(), pod("c", "n1", 3, "2").Obj(),
			}},
			preemptor:   pod("p", "", 10, "1").Obj(),
			wantResult:  &framework.NominatingInfo{NominatedNodeName: "n1", NominatingMode: framework.ModeOverride},
			wantCode:    framework.Success,
			wantMsg:     "preemption: found a potential placement for pod on node n1, preempting 1 victims",
			wantDeleted: []string{"a"},
		},
		{
			name: "equal priority: the pod that started later goes",
			scenario: scenario{nodes: one, pods: []*v1.Pod{
				pod("older", "n1", 1, "2").StartTime(at(0)).Obj(), pod("newer", "n1", 1, "2").StartTime(at(5)).Obj(),
			}},
			preemptor:   pod("p", "", 10, "2").Obj(),
			wantResult:  &framework.NominatingInfo{NominatedNodeName: "n1", NominatingMode: framework.ModeOverride},
			wantCode:    framework.Success,
			wantMsg:     "preemption: found a potential placement for pod on node n1, preempting 1 victims",
			wantDeleted: []string{"newer"},
		},
		{
			name:      "preemptionPolicy Never",
			scenario:  scenario{nodes: one, pods: []*v1.Pod{pod("low", "n1", 1, "4").Obj()}},
			preemptor: pod("p", "", 10, "2").PreemptionPolicy(v1.PreemptNever).Obj(),
			wantCode:  framework.Unschedulable,
			wantMsg:   "preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name:      "victims still terminating on the nominated node: wait, preempt no more",
			scenario:  scenario{nodes: two, pods: []*v1.Pod{terminating, pod("low", "n2", 1, "4").Obj()}},
			preemptor: pod("p", "", 10, "4").NominatedNode("n1").Obj(),
			wantCode:  framework.Unschedulable,
			wantMsg:   "preemption: not eligible due to a terminating pod on the nominated node.",
		},
		{
			name: "terminating pod on the nominated node not deleted by preemption: preempt",
			scenario: scenario{nodes: one, pods: []*v1.Pod{
				pod("leaving", "n1", 1, "2").Terminating().Obj(), pod("low", "n1", 1, "2").Obj(),
			}},
			preemptor:   pod("p", "", 10, "4").NominatedNode("n1").Obj(),
			wantResult:  &framework.NominatingInfo{NominatedNodeName: "n1", NominatingMode: framework.ModeOverride},
			wantCode:    framework.Success,
			wantMsg:     "preemption: found a potential placement for pod on node n1, preempting 2 victims",
			wantDeleted: []string{"low"}, // "leaving" is going already: no second delete
		},
		{
			name:      "nominated node now unresolvable: preempt elsewhere despite its terminating victims",
			scenario:  scenario{nodes: two, pods: []*v1.Pod{terminating, pod("low", "n2", 1, "4").Obj()}},
			preemptor: pod("p", "", 10, "4").NominatedNode("n1").Obj(),
			statuses: fakeStatuses{
				"n1": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector"),
				"n2": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
			},
			wantResult:  &framework.NominatingInfo{NominatedNodeName: "n2", NominatingMode: framework.ModeOverride},
			wantCode:    framework.Success,
			wantMsg:     "preemption: found a potential placement for pod on node n2, preempting 1 victims",
			wantDeleted: []string{"low"},
		},
		{
			name: "no lower-priority pods anywhere: the nomination is cleared",
			scenario: scenario{nodes: two, pods: []*v1.Pod{
				pod("high", "n1", 100, "4").Obj(), pod("same", "n2", 10, "4").Obj(),
			}},
			preemptor:  pod("p", "", 10, "2").NominatedNode("n1").Obj(),
			wantResult: &framework.NominatingInfo{NominatingMode: framework.ModeOverride},
			wantCode:   framework.Unschedulable,
			wantMsg:    "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
		},
		{
			name:       "nodes Filter found unresolvable are not tried",
			scenario:   scenario{nodes: two, pods: []*v1.Pod{pod("low", "n1", 1, "4").Obj(), pod("high", "n2", 100, "4").Obj()}},
			preemptor:  pod("p", "", 10, "2").Obj(),
			statuses:   fakeStatuses{"n1": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: v}"), "n2": framework.NewStatus(framework.Unschedulable, "Insufficient cpu")},
			wantResult: &framework.NominatingInfo{NominatingMode: framework.ModeOverride},
			wantCode:   framework.Unschedulable,
			wantMsg:    "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
		},
		{
			name:       "no node is Unschedulable",
			scenario:   scenario{nodes: one, pods: []*v1.Pod{pod("low", "n1", 1, "4").Obj()}},
			preemptor:  pod("p", "", 10, "2").Obj(),
			statuses:   fakeStatuses{},
			wantResult: &framework.NominatingInfo{NominatingMode: framework.ModeOverride},
			wantCode:   framework.Unschedulable,
			wantMsg:    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name:       "too big even on an empty node",
			scenario:   scenario{nodes: one, pods: []*v1.Pod{pod("low", "n1", 1, "1").Obj()}},
			preemptor:  pod("p", "", 10, "8").Obj(),
			wantResult: &framework.NominatingInfo{NominatingMode: framework.ModeOverride},
			wantCode:   framework.Unschedulable,
			wantMsg:    "preemption: 0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name: "a pod of higher priority nominated to the node keeps its room",
			scenario: scenario{nodes: one,
				pods:      []*v1.Pod{pod("low", "n1", 1, "2").Obj()},
				nominated: []*v1.Pod{pod("waiting-high", "", 50, "2").NominatedNode("n1").Obj()},
			},
			preemptor:  pod("p", "", 10, "4").Obj(),
			wantResult: &framework.NominatingInfo{NominatingMode: framework.ModeOverride},
			wantCode:   framework.Unschedulable,
			wantMsg:    "preemption: 0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name:        "parallel dry run over many nodes",
			scenario:    manyNodes(50),
			preemptor:   pod("p", "", 10, "4").Obj(),
			wantResult:  &framework.NominatingInfo{NominatedNodeName: "n07", NominatingMode: framework.ModeOverride},
			wantCode:    framework.Success,
			wantMsg:     "preemption: found a potential placement for pod on node n07, preempting 1 victims",
			wantDeleted: []string{"v07"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.scenario, tt.preemptor)
			statuses := tt.statuses
			if statuses == nil {
				statuses = unschedulable(tt.scenario.nodes)
			}
			result, status := e.pl.PostFilter(context.Background(), framework.NewCycleState(), tt.preemptor, statuses)
			if status.Code() != tt.wantCode || status.Message() != tt.wantMsg {
				t.Errorf("status %v\nwant      %v: %s", status, tt.wantCode, tt.wantMsg)
			}
			var got *framework.NominatingInfo
			if result != nil {
				got = result.NominatingInfo
			}
			if (got == nil) != (tt.wantResult == nil) || (got != nil && *got != *tt.wantResult) {
				t.Errorf("nominating %+v, want %+v", got, tt.wantResult)
			}
			if d := e.deleted(); !slices.Equal(d, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", d, tt.wantDeleted)
			}
		})
	}
}

// manyNodes has 50 full nodes; on n07 a priority-1 pod is the only victim needed, elsewhere
// two priority-1 pods of 2 cpu must go. The dry run must try all nodes to find n07.
func manyNodes(n int) scenario {
	s := scenario{parallel: true, args: &configv1.DefaultPreemptionArgs{
		MinCandidateNodesPercentage: ptr(int32(100)), MinCandidateNodesAbsolute: ptr(int32(0)),
	}}
	for i := range n {
		name := string(rune('0'+i/10)) + string(rune('0'+i%10))
		s.nodes = append(s.nodes, node("n"+name, "4"))
		if i == 7 {
			s.pods = append(s.pods, pod("v"+name, "n"+name, 1, "4").Obj())
			continue
		}
		s.pods = append(s.pods, pod("a"+name, "n"+name, 1, "2").Obj(), pod("b"+name, "n"+name, 1, "2").Obj())
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestPrepareCandidate(t *testing.T) {
	getOffsetRand = func(int32) int32 { return 0 }
	nodes := []*v1.Node{node("n1", "4")}
	victim := pod("victim", "n1", 1, "2").TerminationGracePeriod(7).Obj()
	victim.Generation = 3
	held := pod("held", "n1", 2, "2").Obj() // assumed, waiting at Permit
	preemptor := pod("p", "", 10, "4").SchedulerName("my-scheduler").Obj()
	s := scenario{
		nodes:   nodes,
		pods:    []*v1.Pod{victim, held},
		waiting: []*v1.Pod{held},
		nominated: []*v1.Pod{
			pod("nominated-low", "", 5, "1").NominatedNode("n1").Obj(),
			pod("nominated-high", "", 20, "0").NominatedNode("n1").Obj(),
		},
	}
	e := newEnv(t, s, preemptor)
	result, status := e.pl.PostFilter(context.Background(), framework.NewCycleState(), preemptor, unschedulable(nodes))
	if !status.IsSuccess() || result.NominatedNodeName != "n1" || result.Mode() != framework.ModeOverride {
		t.Fatalf("got %+v, %v", result, status)
	}

	// The bound victim: DisruptionTarget condition, then a graceful delete.
	if d := e.deleted(); !slices.Equal(d, []string{"victim"}) {
		t.Errorf("deleted %v, want [victim] (held is rejected in memory)", d)
	}
	for _, a := range e.cs.Actions() {
		if a.GetVerb() == "delete" {
			if g := a.(clienttesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds; g == nil || *g != 7 {
				t.Errorf("grace period %v, want 7", g)
			}
		}
	}
	patches := e.statusPatches()
	var patched struct {
		Status struct {
			Conditions        []v1.PodCondition `json:"conditions"`
			NominatedNodeName *string           `json:"nominatedNodeName"`
		} `json:"status"`
	}
	if err := json.Unmarshal(patches["victim"], &patched); err != nil {
		t.Fatalf("victim's patch %s: %v", patches["victim"], err)
	}
	if len(patched.Status.Conditions) != 1 {
		t.Fatalf("victim's patch %s", patches["victim"])
	}
	c := patched.Status.Conditions[0]
	if c.Type != v1.DisruptionTarget || c.Status != v1.ConditionTrue || c.Reason != "PreemptionByScheduler" ||
		c.Message != "my-scheduler: preempting to accommodate a higher priority pod" || c.ObservedGeneration != 3 || c.LastTransitionTime.IsZero() {
		t.Errorf("condition %+v", c)
	}

	// The pod held at Permit is rejected, not deleted.
	if r := e.h.waiting.pods[held.UID].rejected; r != "DefaultPreemption: preempted" {
		t.Errorf("held pod rejection %q", r)
	}
	if _, ok := patches["held"]; ok {
		t.Error("held pod was patched")
	}

	// Only the lower-priority nominated pod loses its nomination.
	if p, ok := patches["nominated-low"]; !ok || !strings.Contains(string(p), `"nominatedNodeName":null`) {
		t.Errorf("nominated-low patch %s", p)
	}
	if _, ok := patches["nominated-high"]; ok {
		t.Error("nominated-high was patched")
	}
	got, err := e.cs.CoreV1().Pods("default").Get(context.Background(), "nominated-low", metav1.GetOptions{})
	if err != nil || got.Status.NominatedNodeName != "" {
		t.Errorf("nominated-low after patch: %v, %v", got.Status.NominatedNodeName, err)
	}

	wantEvents := []string{
		"Normal Preempted Preempted by pod p-uid on node n1",
		"Normal Preempted Preempted by pod p-uid on node n1 (in kube-scheduler memory).",
	}
	if ev := e.events(); !slices.Equal(ev, wantEvents) {
		t.Errorf("events %q\nwant %q", ev, wantEvents)
	}
}

func TestPrepareVictimGone(t *testing.T) {
	getOffsetRand = func(int32) int32 { return 0 }
	nodes := []*v1.Node{node("n1", "4")}
	victim := pod("victim", "n1", 1, "4").Obj()
	preemptor := pod("p", "", 10, "4").Obj()
	e := newEnv(t, scenario{nodes: nodes, pods: []*v1.Pod{victim}}, preemptor)
	// The victim left the API before preemption got to it.
	if err := e.cs.Tracker().Delete(v1.SchemeGroupVersion.WithResource("pods"), "default", "victim"); err != nil {
		t.Fatal(err)
	}
	result, status := e.pl.PostFilter(context.Background(), framework.NewCycleState(), preemptor, unschedulable(nodes))
	if !status.IsSuccess() || result.NominatedNodeName != "n1" {
		t.Fatalf("got %+v, %v", result, status)
	}
	if ev := e.events(); len(ev) != 0 {
		t.Errorf("events %q for a pod already gone", ev)
	}
}

func TestPickOneNodeForPreemption(t *testing.T) {
	p := func(prio int32, start int) *v1.Pod {
		return st.MakePod().Name("x").Priority(prio).StartTime(at(start)).Obj()
	}
	tests := []struct {
		name       string
		candidates []*Candidate
		want       string
	}{
		{
			name: "fewest PDB violations",
			candidates: []*Candidate{
				{Node: "violating", Victims: []*v1.Pod{p(1, 0)}, NumPDBViolations: 1},
				{Node: "clean", Victims: []*v1.Pod{p(9, 0), p(8, 0)}},
			},
			want: "clean",
		},
		{
			name: "lowest highest-victim priority",
			candidates: []*Candidate{
				{Node: "a", Victims: []*v1.Pod{p(5, 0)}},
				{Node: "b", Victims: []*v1.Pod{p(3, 0), p(3, 0), p(3, 0)}},
			},
			want: "b",
		},
		{
			name: "smallest sum of priorities",
			candidates: []*Candidate{
				{Node: "a", Victims: []*v1.Pod{p(5, 0), p(4, 0)}},
				{Node: "b", Victims: []*v1.Pod{p(5, 0), p(1, 0)}},
			},
			want: "b",
		},
		{
			name: "sum counts negative priorities shifted: fewer victims win",
			candidates: []*Candidate{
				{Node: "a", Victims: []*v1.Pod{p(-10, 0), p(-10, 0)}},
				{Node: "b", Victims: []*v1.Pod{p(-10, 0)}},
			},
			want: "b",
		},
		{
			// Shifted sums tie only when the extra victim has the lowest possible priority.
			name: "fewest victims",
			candidates: []*Candidate{
				{Node: "a", Victims: []*v1.Pod{p(0, 0), p(math.MinInt32, 0)}},
				{Node: "b", Victims: []*v1.Pod{p(0, 0)}},
			},
			want: "b",
		},
		{
			name: "latest start of the highest-priority victims",
			candidates: []*Candidate{
				{Node: "a", Victims: []*v1.Pod{p(2, 10), p(2, 1), p(1, 50)}},
				{Node: "b", Victims: []*v1.Pod{p(2, 5), p(2, 3), p(1, 0)}},
			},
			want: "b", // earliest top victim: a at 1, b at 3
		},
		{
			name: "all tie: the first",
			candidates: []*Candidate{
				{Node: "a", Victims: []*v1.Pod{p(2, 5)}},
				{Node: "b", Victims: []*v1.Pod{p(2, 5)}},
				{Node: "c", Victims: []*v1.Pod{p(2, 5)}},
			},
			want: "a",
		},
		{
			name:       "one",
			candidates: []*Candidate{{Node: "only", Victims: []*v1.Pod{p(2, 5)}}},
			want:       "only",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pickOneNodeForPreemption(tt.candidates); got.Node != tt.want {
				t.Errorf("picked %s, want %s", got.Node, tt.want)
			}
			// The order of the candidates matters only for a full tie.
			if tt.name != "all tie: the first" {
				rev := slices.Clone(tt.candidates)
				slices.Reverse(rev)
				if got := pickOneNodeForPreemption(rev); got.Node != tt.want {
					t.Errorf("reversed: picked %s, want %s", got.Node, tt.want)
				}
			}
		})
	}
}

func TestSelectVictimsOnNode(t *testing.T) {
	nodes := []*v1.Node{node("n1", "4")}
	pods := []*v1.Pod{
		pod("p1", "n1", 1, "1").StartTime(at(0)).Obj(),
		pod("p2", "n1", 2, "1").Obj(),
		pod("p1-newer", "n1", 1, "1").StartTime(at(9)).Obj(),
		pod("higher", "n1", 20, "1").Obj(),
	}
	preemptor := pod("p", "", 10, "2").Obj()
	e := newEnv(t, scenario{nodes: nodes, pods: pods}, preemptor)
	ni := e.h.lister.nodes[0]
	before := len(ni.Pods)
	victims, status := e.pl.SelectVictimsOnNode(context.Background(), framework.NewCycleState(), preemptor, ni.Clone())
	if !status.IsSuccess() {
		t.Fatal(status)
	}
	var names []string
	for _, v := range victims {
		names = append(names, v.Name)
	}
	// With "higher" staying, 2 cpu leave room for one more: p2, the most important, is
	// reprieved; the victims are listed most important first.
	if want := []string{"p1", "p1-newer"}; !slices.Equal(names, want) {
		t.Errorf("victims %v, want %v", names, want)
	}
	if len(ni.Pods) != before {
		t.Error("the snapshot's NodeInfo was changed")
	}
	r := e.h.runner.(*fakeRunner)
	// 3 removed, 3 added back, 2 removed again.
	if r.removals != 5 || r.adds != 3 {
		t.Errorf("PreFilter extensions: %d removals, %d adds; want 5, 3", r.removals, r.adds)
	}
}

func TestDryRunSampling(t *testing.T) {
	nodes := []*v1.Node{node("n0", "4"), node("n1", "4"), node("n2", "4"), node("n3", "4")}
	var pods []*v1.Pod
	for _, n := range nodes {
		pods = append(pods, pod("v-"+n.Name, n.Name, 1, "4").Obj())
	}
	preemptor := pod("p", "", 10, "4").Obj()
	args := &configv1.DefaultPreemptionArgs{MinCandidateNodesPercentage: ptr(int32(0)), MinCandidateNodesAbsolute: ptr(int32(2))}
	e := newEnv(t, scenario{nodes: nodes, pods: pods, args: args}, preemptor)
	candidates, _, err := e.pl.dryRunPreemption(context.Background(), framework.NewCycleState(), preemptor, e.h.lister.nodes, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range candidates {
		got = append(got, c.Node)
	}
	// From the offset, wrapping around, until two are found.
	if want := []string{"n3", "n0"}; !slices.Equal(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
}

func TestNumCandidates(t *testing.T) {
	tests := []struct{ nodes, pct, abs, want int32 }{
		{nodes: 5000, pct: 10, abs: 100, want: 500},
		{nodes: 500, pct: 10, abs: 100, want: 100},
		{nodes: 50, pct: 10, abs: 100, want: 50},
		{nodes: 50, pct: 0, abs: 1, want: 1},
		{nodes: 50, pct: 100, abs: 0, want: 50},
	}
	for _, tt := range tests {
		if got := numCandidates(tt.nodes, tt.pct, tt.abs); got != tt.want {
			t.Errorf("numCandidates(%d, %d, %d) = %d, want %d", tt.nodes, tt.pct, tt.abs, got, tt.want)
		}
	}
}

func TestNewArgs(t *testing.T) {
	h := &fakeHandle{}
	tests := []struct {
		name             string
		args             runtime.Object
		wantPct, wantAbs int32
		wantErr          string
	}{
		{name: "nil: v1 defaults", wantPct: 10, wantAbs: 100},
		{name: "empty: v1 defaults", args: &configv1.DefaultPreemptionArgs{}, wantPct: 10, wantAbs: 100},
		{name: "set", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesPercentage: ptr(int32(50)), MinCandidateNodesAbsolute: ptr(int32(0))}, wantPct: 50, wantAbs: 0},
		{name: "percentage too big", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesPercentage: ptr(int32(101))},
			wantErr: "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"},
		{name: "negative absolute", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesAbsolute: ptr(int32(-1))},
			wantErr: "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"},
		{name: "both zero", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesPercentage: ptr(int32(0)), MinCandidateNodesAbsolute: ptr(int32(0))},
			wantErr: "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"},
		{name: "wrong type", args: &configv1.NodeResourcesFitArgs{}, wantErr: "got args of type *v1.NodeResourcesFitArgs, want *DefaultPreemptionArgs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := New(context.Background(), tt.args, h)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := pl.(*Plugin).args
			if *a.MinCandidateNodesPercentage != tt.wantPct || *a.MinCandidateNodesAbsolute != tt.wantAbs {
				t.Errorf("args %d, %d", *a.MinCandidateNodesPercentage, *a.MinCandidateNodesAbsolute)
			}
		})
	}
	if pl, _ := New(context.Background(), nil, h); pl.Name() != "DefaultPreemption" {
		t.Errorf("name %q", pl.Name())
	}
}

func TestEventsToRegister(t *testing.T) {
	pl, _ := New(context.Background(), nil, &fakeHandle{})
	evs, err := pl.(framework.EnqueueExtensions).EventsToRegister(context.Background())
	if err != nil || len(evs) != 0 {
		t.Errorf("events %v, %v", evs, err)
	}
}
