package eviction

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

func memPod(name string, request string, prio int32) *v1.Pod {
	c := v1.Container{Name: "c"}
	if request != "" {
		c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: v1.PodSpec{Containers: []v1.Container{c}, Priority: &prio}}
}

func TestMemoryPressureEvictsTheFirstRankedPod(t *testing.T) {
	usage := map[types.UID]map[string]uint64{
		"within":   {"c": 10 << 20}, // under its 64Mi request
		"over-hi":  {"c": 50 << 20}, // over, high priority
		"over-lo":  {"c": 20 << 20}, // over, low priority: first
		"critical": {"c": 900 << 20},
	}
	pods := []*v1.Pod{memPod("within", "64Mi", 0), memPod("over-hi", "1Mi", 1000), memPod("over-lo", "", 0), memPod("critical", "", 2000001000)}
	available := int64(50 << 20)
	var evicted []string
	var msgs []string
	recorder := record.NewFakeRecorder(10)
	m := NewManager(func() []*v1.Pod { return pods }, func(types.UID) string { return t.TempDir() },
		func(p *v1.Pod, msg string) { evicted = append(evicted, p.Name); msgs = append(msgs, msg) },
	).WithMemoryPressure(MemorySignals{
		Available: func() (int64, error) { return available, nil },
		PodUsage:  func(context.Context) (map[types.UID]map[string]uint64, error) { return usage, nil },
		Threshold: resource.MustParse("100Mi"),
		Recorder:  recorder,
		Node:      &v1.ObjectReference{Kind: "Node", Name: "n"},
	})
	m.synchronize(context.Background())
	if len(evicted) != 1 || evicted[0] != "over-lo" {
		t.Fatalf("evicted %v, want over-lo alone", evicted)
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container c was using 20480Ki, request is 0, has larger consumption of memory. "
	if msgs[0] != want {
		t.Errorf("message %q\nwant    %q", msgs[0], want)
	}
	if !m.IsUnderMemoryPressure() {
		t.Error("no memory pressure reported")
	}
	if ev := <-recorder.Events; !strings.Contains(ev, "EvictionThresholdMet Attempting to reclaim memory") {
		t.Errorf("event %q", ev)
	}

	// Enough memory again: no pressure, no eviction.
	available = 1 << 30
	evicted = nil
	m.synchronize(context.Background())
	if len(evicted) != 0 || m.IsUnderMemoryPressure() {
		t.Errorf("evicted %v with memory available; pressure %t", evicted, m.IsUnderMemoryPressure())
	}
}
