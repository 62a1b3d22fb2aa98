package eviction

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/admission"
)

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

func reqPod(name string, r v1.ResourceName, request string, prio int32) *v1.Pod {
	c := v1.Container{Name: "c"}
	if request != "" {
		c.Resources.Requests = v1.ResourceList{r: resource.MustParse(request)}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: v1.PodSpec{Containers: []v1.Container{c}, Priority: &prio}}
}

// node is a Summary of a node with those free bytes of memory and disk and free PIDs.
type node struct {
	memAvailable, fsAvailable uint64
	pidsFree                  int64
	pods                      []statsapi.PodStats
}

func (n *node) summary(context.Context) (*statsapi.Summary, error) {
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: u64(n.memAvailable), WorkingSetBytes: u64(8<<30 - n.memAvailable)},
		Fs:     &statsapi.FsStats{AvailableBytes: u64(n.fsAvailable), CapacityBytes: u64(100 << 30), InodesFree: u64(1e6), Inodes: u64(2e6)},
		Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{
			AvailableBytes: u64(n.fsAvailable), CapacityBytes: u64(100 << 30), InodesFree: u64(1e6), Inodes: u64(2e6)}},
		Rlimit: &statsapi.RlimitStats{MaxPID: i64(32768), NumOfRunningProcesses: i64(32768 - n.pidsFree)},
	}, Pods: n.pods}
	return s, nil
}

func memStats(uid string, ws uint64) statsapi.PodStats {
	return statsapi.PodStats{PodRef: statsapi.PodReference{Name: uid, UID: uid},
		Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(ws)}}}}
}

func defaultThresholds(t *testing.T) []Threshold {
	th, err := ParseThresholds(map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "imagefs.available": "15%", "pid.available": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func TestMemoryPressureEvictsTheFirstRankedPod(t *testing.T) {
	n := &node{memAvailable: 50 << 20, fsAvailable: 50 << 30, pidsFree: 30000, pods: []statsapi.PodStats{
		memStats("within", 10<<20),  // under its 64Mi request
		memStats("over-hi", 50<<20), // over, high priority
		memStats("over-lo", 20<<20), // over, low priority: first
		memStats("critical", 900<<20),
	}}
	pods := []*v1.Pod{reqPod("within", v1.ResourceMemory, "64Mi", 0), reqPod("over-hi", v1.ResourceMemory, "1Mi", 1000),
		reqPod("over-lo", v1.ResourceMemory, "", 0), reqPod("critical", v1.ResourceMemory, "", 2000001000)}
	var evicted, msgs []string
	recorder := record.NewFakeRecorder(10)
	clock := clocktesting.NewFakeClock(time.Now())
	m := NewManager(func() []*v1.Pod { return pods }, func(types.UID) string { return t.TempDir() },
		func(p *v1.Pod, msg string) { evicted = append(evicted, p.Name); msgs = append(msgs, msg) },
		Config{Thresholds: defaultThresholds(t), Summary: n.summary, Recorder: recorder,
			Node: &v1.ObjectReference{Kind: "Node", Name: "n"}, Clock: clock, PressureTransitionPeriod: time.Minute})
	m.synchronize(context.Background())
	if len(evicted) != 1 || evicted[0] != "over-lo" {
		t.Fatalf("evicted %v, want over-lo alone", evicted)
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 20Mi, request is 0, has larger consumption of memory. "
	if msgs[0] != want {
		t.Errorf("message %q\nwant    %q", msgs[0], want)
	}
	if !m.IsUnderMemoryPressure() || m.IsUnderDiskPressure() || m.IsUnderPIDPressure() {
		t.Errorf("conditions %v, want [MemoryPressure]", m.Conditions())
	}
	if ev := <-recorder.Events; !strings.Contains(ev, "EvictionThresholdMet Attempting to reclaim memory") {
		t.Errorf("event %q", ev)
	}

	// Enough memory again: no eviction, but the condition stays for the transition period.
	n.memAvailable = 1 << 30
	evicted = nil
	m.synchronize(context.Background())
	if len(evicted) != 0 || !m.IsUnderMemoryPressure() {
		t.Errorf("evicted %v with memory available; pressure %t, want kept for the transition period", evicted, m.IsUnderMemoryPressure())
	}
	clock.Step(time.Minute)
	m.synchronize(context.Background())
	if m.IsUnderMemoryPressure() {
		t.Error("memory pressure still reported after the transition period")
	}
}

func TestDiskPressureReclaimsImagesBeforeEvicting(t *testing.T) {
	n := &node{memAvailable: 4 << 30, fsAvailable: 5 << 30, pidsFree: 30000, pods: []statsapi.PodStats{
		podStats("small", map[string][2]uint64{"c": {1 << 20, 0}}),
		podStats("big", map[string][2]uint64{"c": {3 << 30, 1 << 20}}),
	}}
	pods := []*v1.Pod{reqPod("small", v1.ResourceEphemeralStorage, "", 0), reqPod("big", v1.ResourceEphemeralStorage, "", 0)}
	var evicted, msgs []string
	var reclaimed []string
	freeOnReclaim := uint64(0)
	m := NewManager(func() []*v1.Pod { return pods }, func(types.UID) string { return t.TempDir() },
		func(p *v1.Pod, msg string) { evicted = append(evicted, p.Name); msgs = append(msgs, msg) },
		Config{Thresholds: defaultThresholds(t), Summary: n.summary,
			DeleteUnusedContainers: func(context.Context) error { reclaimed = append(reclaimed, "containers"); return nil },
			DeleteUnusedImages: func(context.Context) error {
				reclaimed = append(reclaimed, "images")
				n.fsAvailable += freeOnReclaim
				return nil
			}})

	// Image GC frees enough: nobody is evicted, the node still reports DiskPressure.
	freeOnReclaim = 20 << 30
	m.synchronize(context.Background())
	if strings.Join(reclaimed, ",") != "containers,images" || len(evicted) != 0 {
		t.Fatalf("reclaimed %v, evicted %v; want containers and images reclaimed and no eviction", reclaimed, evicted)
	}
	if !m.IsUnderDiskPressure() {
		t.Error("no DiskPressure reported")
	}

	// Nothing to reclaim: the pod using the most disk above its request goes.
	n.fsAvailable, freeOnReclaim, reclaimed = 5<<30, 0, nil
	m.synchronize(context.Background())
	if len(evicted) != 1 || evicted[0] != "big" {
		t.Fatalf("evicted %v, want big", evicted)
	}
	want := "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi. Container c was using 3073Mi, request is 0, has larger consumption of ephemeral-storage. "
	if msgs[0] != want {
		t.Errorf("message %q\nwant    %q", msgs[0], want)
	}
}

func TestPIDPressure(t *testing.T) {
	n := &node{memAvailable: 4 << 30, fsAvailable: 50 << 30, pidsFree: 500}
	pods := []*v1.Pod{reqPod("important", v1.ResourceCPU, "", 100), reqPod("unimportant", v1.ResourceCPU, "", 10)}
	var evicted, msgs []string
	m := NewManager(func() []*v1.Pod { return pods }, func(types.UID) string { return t.TempDir() },
		func(p *v1.Pod, msg string) { evicted = append(evicted, p.Name); msgs = append(msgs, msg) },
		Config{Thresholds: defaultThresholds(t), Summary: n.summary})
	m.synchronize(context.Background())
	if got := m.Conditions(); len(got) != 1 || got[0] != v1.NodePIDPressure {
		t.Errorf("conditions %v, want [PIDPressure]", got)
	}
	if len(evicted) != 1 || evicted[0] != "unimportant" || msgs[0] != "The node was low on resource: pids. Threshold quantity: 1k, available: 500. " {
		t.Errorf("evicted %v %q, want unimportant with the pids message", evicted, msgs)
	}
}

func TestAdmitUnderPressure(t *testing.T) {
	bestEffort := reqPod("be", v1.ResourceMemory, "", 0)
	burstable := reqPod("burstable", v1.ResourceMemory, "10Mi", 0)
	tolerating := reqPod("tolerating", v1.ResourceMemory, "", 0)
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	critical := reqPod("critical", v1.ResourceMemory, "", 2000000000)

	m := NewManager(nil, nil, nil, Config{})
	admit := func(p *v1.Pod) admission.PodAdmitResult { return m.Admit(&admission.PodAdmitAttributes{Pod: p}) }
	if r := admit(bestEffort); !r.Admit {
		t.Errorf("refused without pressure: %+v", r)
	}
	m.conditions = []v1.NodeConditionType{v1.NodeMemoryPressure}
	if r := admit(bestEffort); r.Admit || r.Reason != "Evicted" || r.Message != "The node had condition: [MemoryPressure]. " {
		t.Errorf("BestEffort under memory pressure: %+v", r)
	}
	for _, p := range []*v1.Pod{burstable, tolerating, critical} {
		if r := admit(p); !r.Admit {
			t.Errorf("%s refused under memory pressure: %+v", p.Name, r)
		}
	}
	m.conditions = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}
	if r := admit(burstable); r.Admit || r.Message != "The node had condition: [MemoryPressure DiskPressure]. " {
		t.Errorf("burstable under disk pressure: %+v", r)
	}
	if r := admit(critical); !r.Admit {
		t.Errorf("critical pod refused: %+v", r)
	}
}

func TestParseThresholds(t *testing.T) {
	th, err := ParseThresholds(map[string]string{"pid.available": "10%", "memory.available": "100Mi", "nodefs.available": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(th) != 2 || th[0].Signal != SignalMemoryAvailable || th[1].Signal != SignalPIDAvailable || th[1].Percentage != 0.1 {
		t.Errorf("thresholds %+v, want memory then pid, the zero one dropped", th)
	}
	for in, want := range map[string]string{
		"disk.available":        "unsupported eviction signal disk.available",
		"nodefs.available:-1Gi": "evictionHard[nodefs.available]: eviction threshold must be positive",
		"nodefs.available:120%": "evictionHard[nodefs.available]: eviction percentage threshold must be positive and at most 100%",
		"nodefs.available:lots": "evictionHard[nodefs.available]: quantities must match",
	} {
		name, value, _ := strings.Cut(in, ":")
		if value == "" {
			value = "1"
		}
		_, err := ParseThresholds(map[string]string{name: value})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}
