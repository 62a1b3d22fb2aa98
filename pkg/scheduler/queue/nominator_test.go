package queue

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// nominated renders the nominator as "node:[pods]" for comparison.
func nominated(q *PriorityQueue, nodes ...string) string {
	var out []string
	for _, n := range nodes {
		var names []string
		for _, pi := range q.NominatedPodsForNode(n) {
			names = append(names, pi.Pod.Name)
		}
		sort.Strings(names)
		out = append(out, fmt.Sprintf("%s:%v", n, names))
	}
	return fmt.Sprint(out)
}

func TestNominator(t *testing.T) {
	p1 := st.MakePod().Name("p1").Obj()
	p2 := st.MakePod().Name("p2").Obj()
	withNNN := func(pod *v1.Pod, node string) *v1.Pod {
		p := pod.DeepCopy()
		p.Status.NominatedNodeName = node
		return p
	}
	override := func(node string) *framework.NominatingInfo {
		return &framework.NominatingInfo{NominatingMode: framework.ModeOverride, NominatedNodeName: node}
	}
	tests := []struct {
		name string
		ops  func(q *PriorityQueue)
		want string // for nodes n1, n2
	}{
		{name: "override", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(p1), override("n1"))
		}, want: "[n1:[p1] n2:[]]"},
		{name: "noop takes status.nominatedNodeName", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(withNNN(p1, "n2")), &framework.NominatingInfo{NominatingMode: framework.ModeNoop})
			q.AddNominatedPod(framework.NewPodInfo(p2), nil) // no node: nothing
		}, want: "[n1:[] n2:[p1]]"},
		{name: "a pod is nominated for one node at most", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(p1), override("n1"))
			q.AddNominatedPod(framework.NewPodInfo(p1), override("n2"))
			q.AddNominatedPod(framework.NewPodInfo(p2), override("n2"))
		}, want: "[n1:[] n2:[p1 p2]]"},
		{name: "delete", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(p1), override("n1"))
			q.AddNominatedPod(framework.NewPodInfo(p2), override("n1"))
			q.DeleteNominatedPodIfExists(p1)
			q.DeleteNominatedPodIfExists(st.MakePod().Name("unknown").Obj())
		}, want: "[n1:[p2] n2:[]]"},
		{name: "update to another node", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(withNNN(p1, "n1")), nil)
			q.UpdateNominatedPod(withNNN(p1, "n1"), framework.NewPodInfo(withNNN(p1, "n2")))
		}, want: "[n1:[] n2:[p1]]"},
		{name: "update keeps an in-memory nomination the API has not caught up with", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(p1), override("n1"))
			q.UpdateNominatedPod(p1, framework.NewPodInfo(p1))
		}, want: "[n1:[p1] n2:[]]"},
		{name: "update that clears status.nominatedNodeName drops it", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(withNNN(p1, "n1")), nil)
			q.UpdateNominatedPod(withNNN(p1, "n1"), framework.NewPodInfo(p1))
		}, want: "[n1:[] n2:[]]"},
		{name: "a bound pod is not nominated", ops: func(q *PriorityQueue) {
			bound := p1.DeepCopy()
			bound.Spec.NodeName = "n1"
			q.AddNominatedPod(framework.NewPodInfo(bound), override("n1"))
		}, want: "[n1:[] n2:[]]"},
		{name: "queue Add records status.nominatedNodeName, queue Update follows it", ops: func(q *PriorityQueue) {
			q.Add(klog.Background(), withNNN(p1, "n1"))
			q.Update(klog.Background(), withNNN(p1, "n1"), withNNN(p1, "n2"))
		}, want: "[n1:[] n2:[p1]]"},
		{name: "queue Delete drops it", ops: func(q *PriorityQueue) {
			q.Add(klog.Background(), withNNN(p1, "n1"))
			q.Delete(p1)
		}, want: "[n1:[] n2:[]]"},
		{name: "bound pod arrives: dropped", ops: func(q *PriorityQueue) {
			q.AddNominatedPod(framework.NewPodInfo(p1), override("n1"))
			bound := p1.DeepCopy()
			bound.Spec.NodeName = "n1"
			q.AssignedPodAdded(klog.Background(), bound)
		}, want: "[n1:[] n2:[]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _, _ := newTestQueue(t)
			tt.ops(q)
			if got := nominated(q, "n1", "n2"); got != tt.want {
				t.Errorf("nominated %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNominatorWithPodLister(t *testing.T) {
	present := st.MakePod().Name("present").Obj()
	bound := st.MakePod().Name("bound").Node("n9").Obj()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods()
	for _, pod := range []*v1.Pod{present, bound} {
		if err := podInformer.Informer().GetStore().Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	q, _, _ := newTestQueue(t, WithPodLister(podInformer.Lister()))
	override := &framework.NominatingInfo{NominatingMode: framework.ModeOverride, NominatedNodeName: "n1"}
	// The queue's copy of "bound" is still unbound; the lister knows better.
	for _, pod := range []*v1.Pod{present, st.MakePod().Name("bound").Obj(), st.MakePod().Name("gone").Obj()} {
		q.AddNominatedPod(framework.NewPodInfo(pod), override)
	}
	if got := nominated(q, "n1"); got != "[n1:[present]]" {
		t.Errorf("nominated %s, want only the present, unbound pod", got)
	}
}

// TestNominatedPodsForNodeReturnsCopies checks that what a reader holds does not change when
// the queue updates the pod.
func TestNominatedPodsForNodeReturnsCopies(t *testing.T) {
	q, _, logger := newTestQueue(t)
	pod := st.MakePod().Name("p").NominatedNode("n1").Obj()
	q.Add(logger, pod)
	got := q.NominatedPodsForNode("n1")
	newPod := pod.DeepCopy()
	newPod.Labels = map[string]string{"v": "2"}
	q.Update(logger, pod, newPod)
	if got[0].Pod != pod {
		t.Error("a PodInfo handed out changed under its reader")
	}
	if again := q.NominatedPodsForNode("n1"); again[0].Pod != newPod {
		t.Error("the nominator did not follow the update")
	}
	got[0].Pod = nil
	if again := q.NominatedPodsForNode("n1"); again[0].Pod != newPod {
		t.Error("a reader changed the nominator's PodInfo")
	}
}

// TestNominatorConcurrentReads runs readers against writers; go test -race checks it.
func TestNominatorConcurrentReads(t *testing.T) {
	q, _, logger := newTestQueue(t)
	var wg sync.WaitGroup
	pods := make([]*v1.Pod, 50)
	for i := range pods {
		pods[i] = st.MakePod().Name(fmt.Sprintf("p%d", i)).NominatedNode("n1").Obj()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, pod := range pods {
			q.Add(logger, pod)
			newPod := pod.DeepCopy()
			newPod.Labels = map[string]string{"x": "y"}
			q.Update(logger, pod, newPod)
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				for _, pi := range q.NominatedPodsForNode("n1") {
					_ = pi.Pod.Labels["x"]
				}
			}
		}()
	}
	wg.Wait()
	if got := q.NominatedPodsForNode("n1"); len(got) != len(pods) || slices.ContainsFunc(got, func(pi *framework.PodInfo) bool { return pi.Pod.Labels["x"] != "y" }) {
		t.Errorf("%d nominated pods, or some not updated", len(got))
	}
}
