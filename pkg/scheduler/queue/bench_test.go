package queue

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

const benchPods = 10000

func benchmarkPods() []*v1.Pod {
	pods := make([]*v1.Pod, benchPods)
	for i := range pods {
		pods[i] = st.MakePod().Name(fmt.Sprintf("p%d", i)).Priority(int32(i % 7)).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "100m"}).Obj()
	}
	return pods
}

// BenchmarkAddPop adds 10,000 pods and pops them all (one op is the whole batch).
func BenchmarkAddPop(b *testing.B) {
	logger := klog.Background()
	pods := benchmarkPods()
	b.ReportAllocs()
	for b.Loop() {
		q := NewPriorityQueue(byPriorityThenTime)
		for _, pod := range pods {
			q.Add(logger, pod)
		}
		for range pods {
			pInfo, err := q.Pop(logger)
			if err != nil {
				b.Fatal(err)
			}
			q.Done(pInfo.Pod.UID)
		}
		q.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPods, "ns/pod")
}

// BenchmarkPopWith10000Pending pops and re-adds one pod while 10,000 others wait, to show that
// the cost of Pop and Add does not grow with the queue.
func BenchmarkPopWith10000Pending(b *testing.B) {
	logger := klog.Background()
	pods := benchmarkPods()
	q := NewPriorityQueue(byPriorityThenTime)
	defer q.Close()
	for _, pod := range pods {
		q.Add(logger, pod)
	}
	b.ReportAllocs()
	for b.Loop() {
		pInfo, err := q.Pop(logger)
		if err != nil {
			b.Fatal(err)
		}
		q.Done(pInfo.Pod.UID)
		q.Add(logger, pInfo.Pod)
	}
}
