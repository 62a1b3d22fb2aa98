package config

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// SharedApiserverSource is the apiserver source of many node agents in one process (berth
// sim): one informer of every bound pod, whose events are routed by spec.nodeName to each
// node's queue. N simulated nodes cost the API server one watch instead of N, and each node
// agent still receives exactly what NewSourceApiserver would send it: a SET once synced,
// then ADD, UPDATE and REMOVE.
type SharedApiserverSource struct {
	informer cache.SharedIndexInformer
	synced   cache.InformerSynced

	mu    sync.RWMutex
	nodes map[string]*podEventQueue
}

const byNodeName = "nodeName"

// NewSharedApiserverSource makes the shared informer; call Run, then Source per node.
func NewSharedApiserverSource(client kubernetes.Interface) *SharedApiserverSource {
	selector := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	s := &SharedApiserverSource{nodes: map[string]*podEventQueue{}}
	s.informer = coreinformers.NewFilteredPodInformer(client, metav1.NamespaceAll, 0,
		cache.Indexers{byNodeName: func(obj interface{}) ([]string, error) {
			if p, ok := obj.(*v1.Pod); ok {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		}},
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
	reg, _ := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { s.route(types.ADD, obj) },
		UpdateFunc: func(_, obj interface{}) { s.route(types.UPDATE, obj) },
		DeleteFunc: func(obj interface{}) { s.route(types.REMOVE, obj) },
	})
	s.synced = reg.HasSynced
	return s
}

// Run runs the informer until ctx ends.
func (s *SharedApiserverSource) Run(ctx context.Context) { s.informer.RunWithContext(ctx) }

// route queues a pod's change for its node, if that node's agent is listening.
func (s *SharedApiserverSource) route(op types.PodOperation, obj interface{}) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
			pod, ok = tomb.Obj.(*v1.Pod)
		}
	}
	if !ok {
		return
	}
	s.mu.RLock()
	q := s.nodes[pod.Spec.NodeName]
	if q != nil {
		q.push(op, pod)
	}
	s.mu.RUnlock()
}

// Source is NewSourceApiserver for nodeName, fed by the shared informer: once nodeHasSynced
// it sends the node's pods to updates until ctx ends.
func (s *SharedApiserverSource) Source(ctx context.Context, nodeName string, nodeHasSynced func() bool, updates chan<- interface{}) {
	go func() {
		if !waitNodeSynced(ctx, nodeHasSynced) {
			return
		}
		klog.FromContext(ctx).V(2).Info("Watching apiserver through the shared informer", "source", types.ApiserverSource)
		q := newPodEventQueue()
		// What the informer already holds goes first; later changes follow through route.
		// Both happen under the lock, so none is lost between them (one seen twice is folded
		// by the first SET, or is an update of the same pod).
		s.mu.Lock()
		existing, _ := s.informer.GetIndexer().ByIndex(byNodeName, nodeName)
		for _, obj := range existing {
			q.push(types.ADD, obj)
		}
		s.nodes[nodeName] = q
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.nodes, nodeName)
			s.mu.Unlock()
		}()
		relay(ctx, q, s.synced, updates)
	}()
}
