package cache

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func names(list []*framework.NodeInfo) []string {
	out := make([]string, 0, len(list))
	for _, ni := range list {
		out = append(out, ni.Node().Name)
	}
	return out
}

func mustUpdate(t testing.TB, c *Cache, logger klog.Logger, s *Snapshot) {
	t.Helper()
	if err := c.UpdateSnapshot(logger, s); err != nil {
		t.Fatal(err)
	}
}

// copiedNodes reports which NodeInfos of s the last UpdateSnapshot re-copied: a copy gets
// new Requested, while an untouched NodeInfo keeps everything it had.
func copiedNodes(s *Snapshot, before map[string]framework.NodeInfo) []string {
	var out []string
	for name, ni := range s.nodeInfoMap {
		if old, ok := before[name]; !ok || old.Requested != ni.Requested {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func remember(s *Snapshot) map[string]framework.NodeInfo {
	out := map[string]framework.NodeInfo{}
	for name, ni := range s.nodeInfoMap {
		out[name] = *ni
	}
	return out
}

func TestUpdateSnapshotIsIncremental(t *testing.T) {
	withAffinity := func(name, nodeName string) *v1.Pod {
		return st.MakePod().Name(name).Node(nodeName).PreferredPodAffinity(1, v1.LabelHostname, "app", "web").Obj()
	}
	withAntiAffinity := func(name, nodeName string) *v1.Pod {
		return st.MakePod().Name(name).Node(nodeName).PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()
	}
	type change func(t *testing.T, c *Cache, logger klog.Logger)
	addPod := func(p *v1.Pod) change {
		return func(t *testing.T, c *Cache, logger klog.Logger) {
			if err := c.AddPod(logger, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	removePod := func(p *v1.Pod) change {
		return func(t *testing.T, c *Cache, logger klog.Logger) {
			if err := c.RemovePod(logger, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	addNode := func(n *v1.Node) change {
		return func(t *testing.T, c *Cache, logger klog.Logger) { c.AddNode(logger, n) }
	}
	removeNode := func(n *v1.Node) change {
		return func(t *testing.T, c *Cache, logger klog.Logger) {
			if err := c.RemoveNode(logger, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every case starts from nodes a1, a2 (zone a) and b1 (zone b), each with one plain pod,
	// a pod with affinity on a2, and a snapshot of them.
	cases := []struct {
		name                string
		changes             []change
		wantCopied          []string
		wantList            []string
		wantAffinity        []string
		wantAntiAffinity    []string
		wantListRebuilt     bool
		wantAffinityRebuilt bool
		wantGone            string
	}{{
		name:         "nothing changed: nothing copied",
		wantList:     []string{"a1", "b1", "a2"},
		wantAffinity: []string{"a2"},
	}, {
		name:         "one node changed: one copied",
		changes:      []change{addPod(pod("extra", "a2", "1"))},
		wantCopied:   []string{"a2"},
		wantList:     []string{"a1", "b1", "a2"},
		wantAffinity: []string{"a2"},
	}, {
		name:         "a node changed twice is copied once",
		changes:      []change{addPod(pod("extra", "a2", "1")), removePod(pod("p-a1", "a1", "100m")), addPod(pod("more", "a2", "1"))},
		wantCopied:   []string{"a1", "a2"},
		wantList:     []string{"a1", "b1", "a2"},
		wantAffinity: []string{"a2"},
	}, {
		name:                "first pod with affinity: affinity lists rebuilt",
		changes:             []change{addPod(withAffinity("aff", "b1")), addPod(withAntiAffinity("anti", "a1"))},
		wantCopied:          []string{"a1", "b1"},
		wantList:            []string{"a1", "b1", "a2"},
		wantAffinity:        []string{"a1", "b1", "a2"},
		wantAntiAffinity:    []string{"a1"},
		wantAffinityRebuilt: true,
	}, {
		name:            "node added: list rebuilt, zones interleaved",
		changes:         []change{addNode(zoned("c1", "", "c")), addNode(zoned("b2", "", "b"))},
		wantCopied:      []string{"b2", "c1"},
		wantList:        []string{"a1", "b1", "c1", "a2", "b2"},
		wantAffinity:    []string{"a2"},
		wantListRebuilt: true,
	}, {
		name:            "node removed: gone from the snapshot",
		changes:         []change{removePod(pod("p-b1", "b1", "100m")), removeNode(zoned("b1", "", "b"))},
		wantList:        []string{"a1", "a2"},
		wantAffinity:    []string{"a2"},
		wantListRebuilt: true,
		wantGone:        "b1",
	}, {
		name:            "node removed with pods: left out though the cache keeps it",
		changes:         []change{removeNode(zoned("a1", "", "a"))},
		wantList:        []string{"a2", "b1"},
		wantAffinity:    []string{"a2"},
		wantListRebuilt: true,
		wantGone:        "a1",
	}, {
		name:            "node removed and back between cycles: copied, listed at the end of its zone",
		changes:         []change{removeNode(zoned("a1", "", "a")), addNode(zoned("a1", "", "a"))},
		wantCopied:      []string{"a1"},
		wantList:        []string{"a2", "b1", "a1"},
		wantAffinity:    []string{"a2"},
		wantListRebuilt: true,
	}, {
		name:            "node moved zones: list reordered",
		changes:         []change{addNode(zoned("a1", "", "b"))},
		wantCopied:      []string{"a1"},
		wantList:        []string{"a2", "b1", "a1"},
		wantAffinity:    []string{"a2"},
		wantListRebuilt: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, logger := newTestCache(t, 0)
			for _, n := range []*v1.Node{zoned("a1", "", "a"), zoned("a2", "", "a"), zoned("b1", "", "b")} {
				c.AddNode(logger, n)
				addPod(pod("p-"+n.Name, n.Name, "100m"))(t, c, logger)
			}
			addPod(withAffinity("aff-a2", "a2"))(t, c, logger)
			s := NewEmptySnapshot()
			mustUpdate(t, c, logger, s)
			before := remember(s)
			pointers := map[string]*framework.NodeInfo{}
			for name, ni := range s.nodeInfoMap {
				pointers[name] = ni
			}
			list, affinity := s.nodeInfoList, s.havePodsWithAffinityNodeInfoList

			for _, ch := range tc.changes {
				ch(t, c, logger)
			}
			mustUpdate(t, c, logger, s)

			if got := copiedNodes(s, before); !slices.Equal(got, tc.wantCopied) {
				t.Errorf("copied %v, want %v", got, tc.wantCopied)
			}
			for name, ni := range s.nodeInfoMap {
				if old, ok := pointers[name]; ok && old != ni {
					t.Errorf("NodeInfo %q is a new pointer; changed NodeInfos are overwritten in place", name)
				}
				if !slices.Contains(tc.wantCopied, name) {
					old := before[name]
					if old.Generation != ni.Generation || &old.Pods[0] != &ni.Pods[0] {
						t.Errorf("unchanged NodeInfo %q was copied again", name)
					}
				}
			}
			if got := names(s.nodeInfoList); !slices.Equal(got, tc.wantList) {
				t.Errorf("List() = %v, want %v", got, tc.wantList)
			}
			if got := names(s.havePodsWithAffinityNodeInfoList); !slices.Equal(got, tc.wantAffinity) {
				t.Errorf("HavePodsWithAffinityList() = %v, want %v", got, tc.wantAffinity)
			}
			if got := names(s.havePodsWithRequiredAntiAffinityNodeInfoList); !slices.Equal(got, tc.wantAntiAffinity) {
				t.Errorf("HavePodsWithRequiredAntiAffinityList() = %v, want %v", got, tc.wantAntiAffinity)
			}
			if rebuilt := !sameSlice(list, s.nodeInfoList); rebuilt != tc.wantListRebuilt {
				t.Errorf("node list rebuilt: %v, want %v", rebuilt, tc.wantListRebuilt)
			}
			if rebuilt := !sameSlice(affinity, s.havePodsWithAffinityNodeInfoList); rebuilt != (tc.wantListRebuilt || tc.wantAffinityRebuilt) {
				t.Errorf("affinity list rebuilt: %v, want %v", rebuilt, tc.wantListRebuilt || tc.wantAffinityRebuilt)
			}
			if s.NumNodes() != len(tc.wantList) {
				t.Errorf("NumNodes() = %d, want %d", s.NumNodes(), len(tc.wantList))
			}
			if name := tc.wantGone; name != "" {
				_, err := s.Get(name)
				if want := fmt.Sprintf("nodeinfo not found for node name %q", name); err == nil || err.Error() != want {
					t.Errorf("Get(%q) error = %v, want %q", name, err, want)
				}
			}
			for _, name := range tc.wantList {
				if ni, err := s.Get(name); err != nil || ni.Node().Name != name {
					t.Errorf("Get(%q) = %v, %v", name, ni, err)
				}
			}
		})
	}
}

// sameSlice reports whether two slices are the same slice (not merely equal).
func sameSlice(a, b []*framework.NodeInfo) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func TestUpdateSnapshotAffinityTransitions(t *testing.T) {
	c, _, logger := newTestCache(t, 0)
	for _, n := range []string{"n1", "n2"} {
		c.AddNode(logger, node(n))
	}
	anti := st.MakePod().Name("anti").Node("n1").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()
	aff := st.MakePod().Name("aff").Node("n2").PodAffinity(v1.LabelHostname, "app", "web").Obj()
	s := NewEmptySnapshot()
	steps := []struct {
		do               func() error
		wantAffinity     []string
		wantAntiAffinity []string
	}{
		{do: func() error { return c.AssumePod(logger, anti) }, wantAffinity: []string{"n1"}, wantAntiAffinity: []string{"n1"}},
		{do: func() error { return c.AssumePod(logger, aff) }, wantAffinity: []string{"n1", "n2"}, wantAntiAffinity: []string{"n1"}},
		{do: func() error { return c.ForgetPod(logger, anti) }, wantAffinity: []string{"n2"}},
		{do: func() error { return c.AddPod(logger, pod("plain", "n2", "1")) }, wantAffinity: []string{"n2"}},
		{do: func() error { return c.ForgetPod(logger, aff) }},
	}
	for i, step := range steps {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		mustUpdate(t, c, logger, s)
		affinity, _ := s.HavePodsWithAffinityList()
		antiAffinity, _ := s.HavePodsWithRequiredAntiAffinityList()
		if got := names(affinity); !slices.Equal(got, step.wantAffinity) {
			t.Errorf("step %d: HavePodsWithAffinityList() = %v, want %v", i, got, step.wantAffinity)
		}
		if got := names(antiAffinity); !slices.Equal(got, step.wantAntiAffinity) {
			t.Errorf("step %d: HavePodsWithRequiredAntiAffinityList() = %v, want %v", i, got, step.wantAntiAffinity)
		}
	}
}

func TestUpdateSnapshotRecoversFromInconsistency(t *testing.T) {
	c, _, logger := newTestCache(t, 0)
	for _, n := range []string{"n1", "n2", "n3"} {
		c.AddNode(logger, node(n))
	}
	s := NewEmptySnapshot()
	mustUpdate(t, c, logger, s)
	// Lose a node behind the cache's back; the generations say nothing changed.
	delete(s.nodeInfoMap, "n2")
	s.nodeInfoList = s.nodeInfoList[:2]
	mustUpdate(t, c, logger, s)
	if got := names(s.nodeInfoList); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("after recovery List() = %v, want all three nodes", got)
	}
	if _, err := s.Get("n2"); err != nil {
		t.Error(err)
	}
}

func TestImageStates(t *testing.T) {
	imaged := func(name string, images ...string) *v1.Node {
		m := map[string]int64{}
		for _, img := range images {
			m[img] = int64(len(img)) * 1000
		}
		return st.MakeNode().Name(name).Images(m).Obj()
	}
	type summary struct{ size, numNodes int64 }
	c, _, logger := newTestCache(t, 0)
	s := NewEmptySnapshot()
	check := func(step string, wantCluster map[string]int, want map[string]map[string]summary) {
		t.Helper()
		mustUpdate(t, c, logger, s)
		got := map[string]int{}
		for name, state := range c.images {
			got[name] = state.nodes.Len()
		}
		if fmt.Sprint(got) != fmt.Sprint(wantCluster) {
			t.Errorf("%s: cluster images %v, want %v", step, got, wantCluster)
		}
		for nodeName, wantImages := range want {
			ni, err := s.Get(nodeName)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			gotImages := map[string]summary{}
			for img, sum := range ni.ImageStates {
				gotImages[img] = summary{sum.Size, int64(sum.NumNodes)}
			}
			if fmt.Sprint(gotImages) != fmt.Sprint(wantImages) {
				t.Errorf("%s: node %s images %v, want %v", step, nodeName, gotImages, wantImages)
			}
		}
	}

	c.AddNode(logger, imaged("n1", "busybox", "pause"))
	c.AddNode(logger, imaged("n2", "pause"))
	check("two nodes", map[string]int{"busybox": 1, "pause": 2}, map[string]map[string]summary{
		"n1": {"busybox": {7000, 1}, "pause": {5000, 2}},
		"n2": {"pause": {5000, 2}},
	})
	old := s.nodeInfoMap["n1"].ImageStates

	c.AddNode(logger, imaged("n3", "pause", "nginx"))
	check("a third node", map[string]int{"busybox": 1, "nginx": 1, "pause": 3}, map[string]map[string]summary{
		"n3": {"pause": {5000, 3}, "nginx": {5000, 1}},
	})
	// n1 did not change, so its copy is as it was; the next change to n1 refreshes it.
	if err := c.AddPod(logger, pod("p", "n1", "1")); err != nil {
		t.Fatal(err)
	}
	check("n1 changed", map[string]int{"busybox": 1, "nginx": 1, "pause": 3}, map[string]map[string]summary{
		"n1": {"busybox": {7000, 1}, "pause": {5000, 3}},
	})
	if old["pause"].NumNodes != 2 {
		t.Errorf("an earlier snapshot's ImageStates changed: pause on %d nodes, want 2", old["pause"].NumNodes)
	}

	c.UpdateNode(logger, imaged("n3", "pause", "nginx"), imaged("n3", "nginx"))
	check("n3 lost pause", map[string]int{"busybox": 1, "nginx": 1, "pause": 2}, map[string]map[string]summary{
		"n3": {"nginx": {5000, 1}},
	})
	if err := c.RemoveNode(logger, imaged("n1")); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveNode(logger, imaged("n3")); err != nil {
		t.Fatal(err)
	}
	check("the last nodes with busybox and nginx went", map[string]int{"pause": 1}, map[string]map[string]summary{
		"n2": {"pause": {5000, 2}}, // unchanged since its copy
	})
}

func TestNewSnapshot(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "a").Images(map[string]int64{"img": 10}).Obj(),
		st.MakeNode().Name("a2").Label(v1.LabelTopologyZone, "a").Images(map[string]int64{"img": 10, "other": 5}).Obj(),
		st.MakeNode().Name("b1").Label(v1.LabelTopologyZone, "b").Obj(),
	}
	pods := []*v1.Pod{
		pod("p", "a1", "1"),
		st.MakePod().Name("p").Namespace("other").Node("a1").Req(cpu("1")).Obj(), // same UID: fine here
		st.MakePod().Name("aff").Node("b1").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj(),
		pod("orphan", "gone", "1"),
	}
	s := NewSnapshot(pods, nodes)
	list, _ := s.NodeInfos().List()
	if got, want := names(list), []string{"a1", "b1", "a2"}; !slices.Equal(got, want) {
		t.Errorf("List() = %v, want %v", got, want)
	}
	if s.NumNodes() != 3 {
		t.Errorf("NumNodes() = %d, want 3", s.NumNodes())
	}
	a1, err := s.Get("a1")
	if err != nil {
		t.Fatal(err)
	}
	if len(a1.Pods) != 2 || a1.Requested.MilliCPU != 2000 {
		t.Errorf("a1 has %d pods requesting %dm, want 2 pods, 2000m", len(a1.Pods), a1.Requested.MilliCPU)
	}
	if sum := a1.ImageStates["img"]; sum == nil || sum.NumNodes != 2 || sum.Size != 10 {
		t.Errorf("a1 image img = %+v, want size 10 on 2 nodes", sum)
	}
	if a2, _ := s.Get("a2"); a2.ImageStates["other"].NumNodes != 1 {
		t.Errorf("a2 image other on %d nodes, want 1", a2.ImageStates["other"].NumNodes)
	}
	if got, _ := s.HavePodsWithRequiredAntiAffinityList(); !slices.Equal(names(got), []string{"b1"}) {
		t.Errorf("HavePodsWithRequiredAntiAffinityList() = %v, want [b1]", names(got))
	}
	if _, err := s.Get("gone"); err == nil || err.Error() != `nodeinfo not found for node name "gone"` {
		t.Errorf("Get(gone) error = %v", err)
	}
}

// TestConcurrentUse runs pod and node events against scheduling cycles, for the race
// detector, and checks that the cache and snapshot agree afterwards.
func TestConcurrentUse(t *testing.T) {
	c, _, logger := newTestCache(t, time.Minute)
	const numNodes, workers, podsPerWorker = 10, 4, 200
	for i := range numNodes {
		c.AddNode(logger, zoned(fmt.Sprintf("n%d", i), "", fmt.Sprintf("z%d", i%3)))
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range podsPerWorker {
				p := pod(fmt.Sprintf("p-%d-%d", w, i), fmt.Sprintf("n%d", i%numNodes), "10m")
				steps := []func() error{
					func() error { return c.AssumePod(logger, p) },
					func() error { return c.FinishBinding(logger, p) },
					func() error { return c.AddPod(logger, p) },
				}
				if i%2 == 1 {
					steps = append(steps, func() error { return c.RemovePod(logger, p) })
				}
				for _, step := range steps {
					if err := step(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	s := NewEmptySnapshot()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		mustUpdate(t, c, logger, s)
		list, _ := s.List()
		for _, ni := range list {
			_ = ni.Requested.MilliCPU
		}
	}
	mustUpdate(t, c, logger, s)
	total := int64(0)
	for _, ni := range s.nodeInfoList {
		total += ni.Requested.MilliCPU
	}
	if want := int64(workers * podsPerWorker / 2 * 10); total != want || c.PodCount() != workers*podsPerWorker/2 {
		t.Errorf("snapshot requests %dm for %d pods, want %dm for %d", total, c.PodCount(), want, workers*podsPerWorker/2)
	}
}

// buildCluster fills a cache with nodes in three zones and podsPerNode pods on each.
func buildCluster(tb testing.TB, c *Cache, logger klog.Logger, numNodes, podsPerNode int) {
	tb.Helper()
	for i := range numNodes {
		n := st.MakeNode().Name(fmt.Sprintf("node-%d", i)).Label(v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).
			Images(map[string]int64{"pause": 1 << 20, fmt.Sprintf("app-%d", i%50): 100 << 20}).Obj()
		c.AddNode(logger, n)
		for j := range podsPerNode {
			p := st.MakePod().Name(fmt.Sprintf("pod-%d-%d", i, j)).Node(n.Name).
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m", v1.ResourceMemory: "128Mi"}).Obj()
			if err := c.AddPod(logger, p); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

func TestUpdateSnapshotAtScale(t *testing.T) {
	c, _, logger := newTestCache(t, 0)
	buildCluster(t, c, logger, 5000, 20)
	s := NewEmptySnapshot()
	mustUpdate(t, c, logger, s)
	if s.NumNodes() != 5000 || c.PodCount() != 100000 {
		t.Fatalf("%d nodes, %d pods; want 5000, 100000", s.NumNodes(), c.PodCount())
	}
	before := remember(s)
	if err := c.AssumePod(logger, pod("new", "node-1234", "1")); err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, c, logger, s)
	if got := copiedNodes(s, before); !slices.Equal(got, []string{"node-1234"}) {
		t.Errorf("copied %v, want [node-1234]", got)
	}
}

// BenchmarkUpdateSnapshot measures a scheduling cycle's snapshot update at 5000 nodes and
// 100,000 pods when one node changed since the last cycle (a pod assumed or forgotten).
func BenchmarkUpdateSnapshot(b *testing.B) {
	c, _, logger := newTestCache(b, 0)
	const numNodes = 5000
	buildCluster(b, c, logger, numNodes, 20)
	s := NewEmptySnapshot()
	mustUpdate(b, c, logger, s)
	pods := make([]*v1.Pod, numNodes)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("bench-%d", i), fmt.Sprintf("node-%d", i), "1")
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := pods[(i/2)%numNodes]
		var err error
		if i%2 == 0 {
			err = c.AssumePod(logger, p)
		} else {
			err = c.ForgetPod(logger, p)
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := c.UpdateSnapshot(logger, s); err != nil {
			b.Fatal(err)
		}
	}
}
