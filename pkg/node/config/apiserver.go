package config

import (
	"context"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	ktypes "k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// nodeSyncPollPeriod is how often the apiserver source checks whether the node is known.
// The kubelet checks every second; then a pod bound the moment the node turned Ready waited up
// to a second before the node agent even watched for it (berth bench startup's first round
// took 1.5 s instead of 0.45 s), so berth checks ten times as often. A check is a cache read.
const nodeSyncPollPeriod = 100 * time.Millisecond

// NewSourceApiserver sends the pods bound to nodeName (field selector spec.nodeName) to
// updates until ctx ends. It waits for nodeHasSynced first: the pods' admission needs the
// Node object. Then it starts an informer and sends a SET of every pod once the informer has
// listed them, then an ADD, UPDATE or REMOVE for each change the watch brings (consecutive
// changes of one kind go out together).
func NewSourceApiserver(ctx context.Context, client kubernetes.Interface, nodeName string, nodeHasSynced func() bool, updates chan<- interface{}) {
	logger := klog.FromContext(ctx).WithValues("source", types.ApiserverSource)
	go func() {
		logger.Info("Waiting for node sync before watching apiserver pods")
		if !waitNodeSynced(ctx, nodeHasSynced) {
			return
		}
		logger.Info("Watching apiserver")
		selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
		informer := coreinformers.NewFilteredPodInformer(client, metav1.NamespaceAll, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.FieldSelector = selector })
		runApiserverSource(klog.NewContext(ctx, logger), informer, updates)
	}()
}

// waitNodeSynced polls nodeHasSynced until it is true (the pods' admission needs the Node),
// or ctx ends: then it returns false.
func waitNodeSynced(ctx context.Context, nodeHasSynced func() bool) bool {
	ticker := time.NewTicker(nodeSyncPollPeriod)
	defer ticker.Stop()
	for !nodeHasSynced() {
		select {
		case <-ctx.Done():
			return false
		case <-ticker.C:
		}
	}
	return true
}

// runApiserverSource relays informer's pods to updates until ctx ends. The informer's
// handler only queues what happened; this goroutine, the queue's only reader, turns the
// events the informer delivered before it synced into the first SET, and the rest into
// incremental updates, so the merge sees every change once and in order.
func runApiserverSource(ctx context.Context, informer cache.SharedIndexInformer, updates chan<- interface{}) {
	logger := klog.FromContext(ctx)
	q := newPodEventQueue()
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { q.push(types.ADD, obj) },
		UpdateFunc: func(_, obj interface{}) { q.push(types.UPDATE, obj) },
		DeleteFunc: func(obj interface{}) { q.push(types.REMOVE, obj) },
	})
	if err != nil {
		logger.Error(err, "Unable to watch pods")
		return
	}
	go informer.RunWithContext(ctx)
	relay(ctx, q, reg.HasSynced, updates)
}

// relay sends the queue's events to updates until ctx ends: once synced, a SET of what
// the events so far leave, then incremental updates.
func relay(ctx context.Context, q *podEventQueue, synced cache.InformerSynced, updates chan<- interface{}) {
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	send := func(u types.PodUpdate) bool {
		select {
		case updates <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !send(types.PodUpdate{Op: types.SET, Pods: snapshot(q.drain()), Source: types.ApiserverSource}) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.ready:
			for _, u := range batch(q.drain()) {
				if !send(u) {
					return
				}
			}
		}
	}
}

// podEvent is one change the informer delivered.
type podEvent struct {
	op  types.PodOperation // ADD, UPDATE or REMOVE
	pod *v1.Pod
}

// podEventQueue is an unbounded queue between the informer's handler, which must not
// block, and the source's goroutine.
type podEventQueue struct {
	mu     sync.Mutex
	events []podEvent
	// ready holds a token while events are waiting.
	ready chan struct{}
}

func newPodEventQueue() *podEventQueue {
	return &podEventQueue{ready: make(chan struct{}, 1)}
}

func (q *podEventQueue) push(op types.PodOperation, obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	q.mu.Lock()
	q.events = append(q.events, podEvent{op: op, pod: pod})
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *podEventQueue) drain() []podEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	events := q.events
	q.events = nil
	return events
}

// snapshot folds events into the pods they leave, by namespace and name.
func snapshot(events []podEvent) []*v1.Pod {
	byUID := map[ktypes.UID]*v1.Pod{}
	for _, e := range events {
		if e.op == types.REMOVE {
			delete(byUID, e.pod.UID)
		} else {
			byUID[e.pod.UID] = e.pod
		}
	}
	pods := make([]*v1.Pod, 0, len(byUID))
	for _, p := range byUID {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	return pods
}

// batch groups runs of events of one kind into one update each; a pod changed twice in a run
// appears once, as its latest version.
func batch(events []podEvent) []types.PodUpdate {
	var out []types.PodUpdate
	var at map[ktypes.UID]int // index in the current batch's pods
	for _, e := range events {
		if len(out) == 0 || out[len(out)-1].Op != e.op {
			out = append(out, types.PodUpdate{Op: e.op, Source: types.ApiserverSource})
			at = map[ktypes.UID]int{}
		}
		cur := &out[len(out)-1]
		if i, ok := at[e.pod.UID]; ok {
			cur.Pods[i] = e.pod
			continue
		}
		at[e.pod.UID] = len(cur.Pods)
		cur.Pods = append(cur.Pods, e.pod)
	}
	return out
}
