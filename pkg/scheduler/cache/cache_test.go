package cache

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestCache returns a cache on a fake clock whose expiry loop ends with the test.
func newTestCache(t testing.TB, ttl time.Duration) (*Cache, *clocktesting.FakeClock, klog.Logger) {
	t.Helper()
	// Below the cache's per-pod V(5) messages, which would swamp the benchmarks.
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	clk := clocktesting.NewFakeClock(t0)
	c := newCache(ctx, ttl, clk)
	t.Cleanup(func() { cancel(); <-c.stopped })
	return c, clk, logger
}

func cpu(m string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: m} }

func node(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourcePods: "110"}).Obj()
}

func pod(name, nodeName, milliCPU string) *v1.Pod {
	return st.MakePod().Name(name).Node(nodeName).Req(cpu(milliCPU)).Obj()
}

// step is one call on the cache. Exactly one of its verbs is used.
type step struct {
	assume, finish, forget, add, remove *v1.Pod
	update                              [2]*v1.Pod // old, new
	addNode, removeNode                 *v1.Node
	wait                                time.Duration // advance the clock, then clean up
	wantErr                             bool
}

func (s step) run(c *Cache, clk *clocktesting.FakeClock, logger klog.Logger) error {
	switch {
	case s.assume != nil:
		return c.AssumePod(logger, s.assume)
	case s.finish != nil:
		return c.FinishBinding(logger, s.finish)
	case s.forget != nil:
		return c.ForgetPod(logger, s.forget)
	case s.add != nil:
		return c.AddPod(logger, s.add)
	case s.remove != nil:
		return c.RemovePod(logger, s.remove)
	case s.update[1] != nil:
		return c.UpdatePod(logger, s.update[0], s.update[1])
	case s.addNode != nil:
		c.AddNode(logger, s.addNode)
		return nil
	case s.removeNode != nil:
		return c.RemoveNode(logger, s.removeNode)
	default:
		clk.Step(s.wait)
		c.cleanupAssumedPods(logger, clk.Now())
		return nil
	}
}

// nodeWant is what a NodeInfo in the cache should hold.
type nodeWant struct {
	pods     []string // names, sorted
	milliCPU int64
	noNode   bool // kept only for its pods
}

func checkCache(t *testing.T, c *Cache, wantNodes map[string]nodeWant, wantAssumed []string) {
	t.Helper()
	d := c.Dump()
	if len(d.Nodes) != len(wantNodes) {
		t.Errorf("cache has NodeInfos %v, want %v", keys(d.Nodes), keys(wantNodes))
	}
	pods := 0
	for name, want := range wantNodes {
		ni, ok := d.Nodes[name]
		if !ok {
			t.Errorf("no NodeInfo %q", name)
			continue
		}
		var got []string
		for _, pi := range ni.Pods {
			got = append(got, pi.Pod.Name)
		}
		slices.Sort(got)
		pods += len(got)
		if !slices.Equal(got, want.pods) {
			t.Errorf("node %q has pods %v, want %v", name, got, want.pods)
		}
		if ni.Requested.MilliCPU != want.milliCPU {
			t.Errorf("node %q requests %dm cpu, want %dm", name, ni.Requested.MilliCPU, want.milliCPU)
		}
		if (ni.Node() == nil) != want.noNode {
			t.Errorf("node %q: Node() = %v, want a node: %v", name, ni.Node(), !want.noNode)
		}
	}
	var assumed []string
	for _, ps := range c.assumed {
		assumed = append(assumed, ps.info.Pod.Name)
	}
	slices.Sort(assumed)
	if !slices.Equal(assumed, wantAssumed) {
		t.Errorf("assumed pods %v, want %v", assumed, wantAssumed)
	}
	if c.PodCount() != pods {
		t.Errorf("PodCount() = %d, want %d", c.PodCount(), pods)
	}
	if c.AssumedPodCount() != len(wantAssumed) {
		t.Errorf("AssumedPodCount() = %d, want %d", c.AssumedPodCount(), len(wantAssumed))
	}
	if c.NodeCount() != len(wantNodes) {
		t.Errorf("NodeCount() = %d, want %d", c.NodeCount(), len(wantNodes))
	}
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func TestPodLifecycle(t *testing.T) {
	p := pod("p", "a", "500m")
	onB := pod("p", "b", "500m")
	bigger := pod("p", "a", "1")
	q := pod("q", "a", "250m")
	cases := []struct {
		name        string
		steps       []step
		wantNodes   map[string]nodeWant
		wantAssumed []string
	}{{
		name:        "assumed pod counts on its node",
		steps:       []step{{addNode: node("a")}, {assume: p}},
		wantNodes:   map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
		wantAssumed: []string{"p"},
	}, {
		name:      "assume, finish binding, add confirms without counting twice",
		steps:     []step{{addNode: node("a")}, {assume: p}, {finish: p}, {add: p}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "add confirms before binding finished",
		steps:     []step{{addNode: node("a")}, {assume: p}, {add: p}, {finish: p}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "assume then forget",
		steps:     []step{{addNode: node("a")}, {assume: p}, {forget: p}},
		wantNodes: map[string]nodeWant{"a": {}},
	}, {
		name:      "forget after binding finished",
		steps:     []step{{addNode: node("a")}, {assume: p}, {finish: p}, {forget: p}},
		wantNodes: map[string]nodeWant{"a": {}},
	}, {
		name:        "assuming twice fails",
		steps:       []step{{addNode: node("a")}, {assume: p}, {assume: p, wantErr: true}},
		wantNodes:   map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
		wantAssumed: []string{"p"},
	}, {
		name:      "assuming an added pod fails",
		steps:     []step{{addNode: node("a")}, {add: p}, {assume: p, wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "assuming without a node fails",
		steps:     []step{{assume: pod("p", "", "1"), wantErr: true}},
		wantNodes: map[string]nodeWant{},
	}, {
		name:      "assuming without a UID fails",
		steps:     []step{{assume: st.MakePod().Node("a").Obj(), wantErr: true}},
		wantNodes: map[string]nodeWant{},
	}, {
		name:      "forgetting a pod never assumed fails",
		steps:     []step{{addNode: node("a")}, {forget: p, wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {}},
	}, {
		name:      "forgetting an added pod fails",
		steps:     []step{{addNode: node("a")}, {assume: p}, {add: p}, {forget: p, wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:        "forgetting on another node than assumed fails",
		steps:       []step{{addNode: node("a")}, {addNode: node("b")}, {assume: p}, {forget: onB, wantErr: true}},
		wantNodes:   map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}, "b": {}},
		wantAssumed: []string{"p"},
	}, {
		name:      "assumed on a, added on b: moved",
		steps:     []step{{addNode: node("a")}, {addNode: node("b")}, {assume: p}, {finish: p}, {add: onB}},
		wantNodes: map[string]nodeWant{"a": {}, "b": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "adding twice fails",
		steps:     []step{{addNode: node("a")}, {add: p}, {add: p, wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "update moves the pod's requests",
		steps:     []step{{addNode: node("a")}, {add: p}, {add: q}, {update: [2]*v1.Pod{p, bigger}}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p", "q"}, milliCPU: 1250}},
	}, {
		name:      "update on another node than added moves the pod",
		steps:     []step{{addNode: node("a")}, {addNode: node("b")}, {add: p}, {update: [2]*v1.Pod{p, onB}}},
		wantNodes: map[string]nodeWant{"a": {}, "b": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:        "updating an assumed pod fails",
		steps:       []step{{addNode: node("a")}, {assume: p}, {update: [2]*v1.Pod{p, bigger}, wantErr: true}},
		wantNodes:   map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
		wantAssumed: []string{"p"},
	}, {
		name:      "updating an unknown pod fails",
		steps:     []step{{addNode: node("a")}, {update: [2]*v1.Pod{p, bigger}, wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {}},
	}, {
		name:      "remove",
		steps:     []step{{addNode: node("a")}, {add: p}, {add: q}, {remove: p}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"q"}, milliCPU: 250}},
	}, {
		name:      "remove an assumed pod",
		steps:     []step{{addNode: node("a")}, {assume: p}, {remove: p}},
		wantNodes: map[string]nodeWant{"a": {}},
	}, {
		name:      "remove with an empty node name (last state of a missed delete)",
		steps:     []step{{addNode: node("a")}, {add: p}, {remove: pod("p", "", "500m")}},
		wantNodes: map[string]nodeWant{"a": {}},
	}, {
		name:      "removing an unknown pod fails",
		steps:     []step{{addNode: node("a")}, {remove: p, wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {}},
	}, {
		name:      "pod before its node: NodeInfo without node, then the node",
		steps:     []step{{add: p}, {addNode: node("a")}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "pod without node yet",
		steps:     []step{{add: p}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500, noNode: true}},
	}, {
		name:      "removed node with pods keeps a node-less NodeInfo",
		steps:     []step{{addNode: node("a")}, {add: p}, {add: q}, {removeNode: node("a")}, {remove: p}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"q"}, milliCPU: 250, noNode: true}},
	}, {
		name:      "node-less NodeInfo goes with its last pod",
		steps:     []step{{addNode: node("a")}, {add: p}, {removeNode: node("a")}, {remove: p}},
		wantNodes: map[string]nodeWant{},
	}, {
		name:      "removed node without pods goes at once",
		steps:     []step{{addNode: node("a")}, {addNode: node("b")}, {removeNode: node("a")}},
		wantNodes: map[string]nodeWant{"b": {}},
	}, {
		name:      "removing an unknown node fails",
		steps:     []step{{removeNode: node("a"), wantErr: true}},
		wantNodes: map[string]nodeWant{},
	}, {
		name:      "removing a removed node fails",
		steps:     []step{{addNode: node("a")}, {add: p}, {removeNode: node("a")}, {removeNode: node("a"), wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500, noNode: true}},
	}, {
		name:      "removed node comes back with its pods",
		steps:     []step{{addNode: node("a")}, {add: p}, {removeNode: node("a")}, {addNode: node("a")}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, logger := newTestCache(t, 30*time.Second)
			for i, s := range tc.steps {
				if err := s.run(c, clk, logger); (err != nil) != s.wantErr {
					t.Fatalf("step %d: err = %v, want error: %v", i, err, s.wantErr)
				}
			}
			checkCache(t, c, tc.wantNodes, tc.wantAssumed)
		})
	}
}

func TestExpiry(t *testing.T) {
	p := pod("p", "a", "500m")
	cases := []struct {
		name        string
		ttl         time.Duration
		steps       []step
		wantNodes   map[string]nodeWant
		wantAssumed []string
	}{{
		name:      "expires ttl after binding finished",
		ttl:       30 * time.Second,
		steps:     []step{{assume: p}, {wait: 10 * time.Second}, {finish: p}, {wait: 31 * time.Second}},
		wantNodes: map[string]nodeWant{},
	}, {
		name:        "not before ttl",
		ttl:         30 * time.Second,
		steps:       []step{{assume: p}, {finish: p}, {wait: 29 * time.Second}},
		wantNodes:   map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500, noNode: true}},
		wantAssumed: []string{"p"},
	}, {
		name:        "never while binding",
		ttl:         30 * time.Second,
		steps:       []step{{assume: p}, {wait: time.Hour}},
		wantNodes:   map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500, noNode: true}},
		wantAssumed: []string{"p"},
	}, {
		name:        "never with ttl 0",
		steps:       []step{{assume: p}, {finish: p}, {wait: time.Hour}},
		wantNodes:   map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500, noNode: true}},
		wantAssumed: []string{"p"},
	}, {
		name:      "a confirmed pod does not expire",
		ttl:       30 * time.Second,
		steps:     []step{{addNode: node("a")}, {assume: p}, {finish: p}, {add: p}, {wait: time.Hour}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "an expired pod added later counts again, once",
		ttl:       30 * time.Second,
		steps:     []step{{addNode: node("a")}, {assume: p}, {finish: p}, {wait: time.Minute}, {add: p}, {wait: time.Hour}},
		wantNodes: map[string]nodeWant{"a": {pods: []string{"p"}, milliCPU: 500}},
	}, {
		name:      "forgetting an expired pod fails",
		ttl:       30 * time.Second,
		steps:     []step{{addNode: node("a")}, {assume: p}, {finish: p}, {wait: time.Minute}, {forget: p, wantErr: true}},
		wantNodes: map[string]nodeWant{"a": {}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, logger := newTestCache(t, tc.ttl)
			for i, s := range tc.steps {
				if err := s.run(c, clk, logger); (err != nil) != s.wantErr {
					t.Fatalf("step %d: err = %v, want error: %v", i, err, s.wantErr)
				}
			}
			checkCache(t, c, tc.wantNodes, tc.wantAssumed)
		})
	}
}

// TestExpiryLoop checks that New's goroutine expires pods as the clock ticks and ends with
// its context.
func TestExpiryLoop(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clk := clocktesting.NewFakeClock(t0)
	c := newCache(ctx, 30*time.Second, clk)
	p := pod("p", "a", "1")
	if err := c.AssumePod(logger, p); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishBinding(logger, p); err != nil {
		t.Fatal(err)
	}
	for !clk.HasWaiters() { // the loop's ticker
		time.Sleep(time.Millisecond)
	}
	clk.Step(31 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for c.PodCount() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("assumed pod did not expire")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-c.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("expiry loop still running after its context ended")
	}
}

func TestPodLookups(t *testing.T) {
	c, _, logger := newTestCache(t, 0)
	assumed, added, absent := pod("p", "a", "1"), pod("q", "a", "1"), pod("r", "a", "1")
	if err := c.AssumePod(logger, assumed); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPod(logger, added); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod         *v1.Pod
		wantAssumed bool
		wantFound   bool
	}{{assumed, true, true}, {added, false, true}, {absent, false, false}} {
		if got, err := c.IsAssumedPod(tc.pod); err != nil || got != tc.wantAssumed {
			t.Errorf("IsAssumedPod(%s) = %v, %v; want %v", tc.pod.Name, got, err, tc.wantAssumed)
		}
		got, err := c.GetPod(tc.pod)
		if tc.wantFound && (err != nil || got != tc.pod) {
			t.Errorf("GetPod(%s) = %v, %v; want the pod", tc.pod.Name, got, err)
		}
		if !tc.wantFound && err == nil {
			t.Errorf("GetPod(%s) found %v, want an error", tc.pod.Name, got)
		}
	}
	if _, err := c.IsAssumedPod(st.MakePod().Obj()); err == nil {
		t.Error("IsAssumedPod of a pod without UID: want an error")
	}
	if d := c.Dump(); !d.AssumedPods.Has(assumed.UID) || d.AssumedPods.Len() != 1 {
		t.Errorf("Dump().AssumedPods = %v, want {%s}", d.AssumedPods, assumed.UID)
	}
}

// TestRequested checks what a pod adds to its node, as framework.PodInfo sums it.
func TestRequested(t *testing.T) {
	mem := func(cpu, mem string) map[v1.ResourceName]string {
		return map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: mem}
	}
	cases := []struct {
		name                string
		pod                 *v1.Pod
		wantCPU, wantMemory int64
		wantNonZeroCPU      int64
		wantPorts           int
	}{{
		name:    "containers",
		pod:     st.MakePod().Name("p").Node("a").Req(mem("500m", "1Gi")).Obj(),
		wantCPU: 500, wantMemory: 1 << 30, wantNonZeroCPU: 500,
	}, {
		name:    "an init container asking more than the app containers",
		pod:     st.MakePod().Name("p").Node("a").Req(mem("500m", "1Gi")).InitReq(mem("2", "512Mi")).Obj(),
		wantCPU: 2000, wantMemory: 1 << 30, wantNonZeroCPU: 2000,
	}, {
		name:    "overhead on top",
		pod:     st.MakePod().Name("p").Node("a").Req(mem("500m", "1Gi")).InitReq(mem("2", "512Mi")).Overhead(mem("100m", "64Mi")).Obj(),
		wantCPU: 2100, wantMemory: 1<<30 + 64<<20, wantNonZeroCPU: 2100,
	}, {
		name:    "nothing requested: zero, with defaults for scoring",
		pod:     st.MakePod().Name("p").Node("a").Obj(),
		wantCPU: 0, wantMemory: 0, wantNonZeroCPU: 100,
	}, {
		name:    "host ports",
		pod:     st.MakePod().Name("p").Node("a").HostPort(80, v1.ProtocolTCP, "").HostPort(53, v1.ProtocolUDP, "").Obj(),
		wantCPU: 0, wantNonZeroCPU: 100, wantPorts: 2,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, logger := newTestCache(t, 0)
			c.AddNode(logger, node("a"))
			if err := c.AssumePod(logger, tc.pod); err != nil {
				t.Fatal(err)
			}
			ni := c.Dump().Nodes["a"]
			if ni.Requested.MilliCPU != tc.wantCPU || ni.Requested.Memory != tc.wantMemory || ni.NonZeroRequested.MilliCPU != tc.wantNonZeroCPU {
				t.Errorf("requested %dm cpu, %d memory, non-zero %dm cpu; want %dm, %d, %dm",
					ni.Requested.MilliCPU, ni.Requested.Memory, ni.NonZeroRequested.MilliCPU, tc.wantCPU, tc.wantMemory, tc.wantNonZeroCPU)
			}
			if ni.UsedPorts.Len() != tc.wantPorts {
				t.Errorf("used ports %v, want %d", ni.UsedPorts, tc.wantPorts)
			}
			if err := c.ForgetPod(logger, tc.pod); err != nil {
				t.Fatal(err)
			}
			ni = c.Dump().Nodes["a"]
			if ni.Requested.MilliCPU != 0 || ni.Requested.Memory != 0 || ni.NonZeroRequested.MilliCPU != 0 || ni.UsedPorts.Len() != 0 {
				t.Errorf("after ForgetPod: requested %+v, non-zero %+v, ports %v; want nothing", ni.Requested, ni.NonZeroRequested, ni.UsedPorts)
			}
		})
	}
}

func TestAddNodeReturnsCopy(t *testing.T) {
	c, _, logger := newTestCache(t, 0)
	if err := c.AddPod(logger, pod("p", "a", "1")); err != nil {
		t.Fatal(err)
	}
	ni := c.AddNode(logger, node("a"))
	if ni.Node() == nil || ni.Node().Name != "a" || len(ni.Pods) != 1 || ni.Allocatable.MilliCPU != 4000 {
		t.Fatalf("AddNode returned %+v, want node a with its pod and 4 cpus", ni)
	}
	ni.Requested.MilliCPU = 42
	if got := c.Dump().Nodes["a"].Requested.MilliCPU; got != 1000 {
		t.Errorf("changing the returned NodeInfo changed the cache: %dm cpu requested", got)
	}
	updated := st.MakeNode().Name("a").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "8"}).Obj()
	if ni := c.UpdateNode(logger, node("a"), updated); ni.Allocatable.MilliCPU != 8000 || len(ni.Pods) != 1 {
		t.Errorf("UpdateNode returned %+v, want 8 cpus and the pod", ni)
	}
}
