package interpodaffinity

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// snapshot is a SharedLister over fixed nodes and pods, as the cache's snapshot would be.
type snapshot struct {
	infos  []*framework.NodeInfo
	byName map[string]*framework.NodeInfo
}

func newSnapshot(pods []*v1.Pod, nodes []*v1.Node) *snapshot {
	s := &snapshot{byName: map[string]*framework.NodeInfo{}}
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		s.infos = append(s.infos, ni)
		s.byName[n.Name] = ni
	}
	for _, p := range pods {
		if ni, ok := s.byName[p.Spec.NodeName]; ok {
			ni.AddPod(framework.NewPodInfo(p))
		}
	}
	return s
}

func (s *snapshot) NodeInfos() framework.NodeInfoLister  { return s }
func (s *snapshot) List() ([]*framework.NodeInfo, error) { return s.infos, nil }
func (s *snapshot) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	var out []*framework.NodeInfo
	for _, ni := range s.infos {
		if len(ni.PodsWithAffinity) > 0 {
			out = append(out, ni)
		}
	}
	return out, nil
}
func (s *snapshot) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	var out []*framework.NodeInfo
	for _, ni := range s.infos {
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			out = append(out, ni)
		}
	}
	return out, nil
}
func (s *snapshot) Get(name string) (*framework.NodeInfo, error) {
	if ni, ok := s.byName[name]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("node %q not found", name)
}

// infos returns the snapshot's NodeInfos of the named nodes, in that order.
func (s *snapshot) infosOf(nodes []*v1.Node) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, s.byName[n.Name])
	}
	return out
}

// parallelizer runs the pieces on a few goroutines, so that the race detector sees real
// concurrency.
type parallelizer struct{}

func (parallelizer) Until(ctx context.Context, pieces int, do func(int), _ string) {
	const workers = 4
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < pieces; i += workers {
				do(i)
			}
		}(w)
	}
	wg.Wait()
}

// fakeHandle is the part of framework.Handle the plugin uses; the rest panics.
type fakeHandle struct {
	framework.Handle
	snap    *snapshot
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
}

func (h *fakeHandle) SnapshotSharedLister() framework.SharedLister { return h.snap }
func (h *fakeHandle) Parallelizer() framework.Parallelizer         { return parallelizer{} }
func (h *fakeHandle) ClientSet() kubernetes.Interface              { return h.client }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory {
	return h.factory
}

// newPlugin builds the plugin over a snapshot of pods and nodes. With namespaces (name →
// labels) it also gets a namespace informer over a fake API holding them; without, none.
func newPlugin(t *testing.T, args runtime.Object, pods []*v1.Pod, nodes []*v1.Node, namespaces map[string]map[string]string) (*Plugin, *snapshot) {
	t.Helper()
	snap := newSnapshot(pods, nodes)
	h := &fakeHandle{snap: snap}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if namespaces != nil {
		var objs []runtime.Object
		for name, labels := range namespaces {
			objs = append(objs, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
		}
		h.client = fake.NewClientset(objs...)
		h.factory = informers.NewSharedInformerFactory(h.client, 0)
	}
	pl, err := New(ctx, args, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if h.factory != nil {
		h.factory.Start(ctx.Done())
		h.factory.WaitForCacheSync(ctx.Done())
	}
	return pl.(*Plugin), snap
}
