package node

import (
	"context"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// Dead containers: the podContainerDeletor removes a pod's surplus dead containers as soon
// as one dies (cleanUpContainersInPod), and the container GC sweeps the whole runtime every
// minute, as the kubelet's GarbageCollect does.

const (
	// containerGCPeriod is how often the container GC runs.
	containerGCPeriod = time.Minute
	// minDeadContainerInPod is how many dead instances of each container a live pod keeps:
	// the last one, for `kubectl logs --previous` and the restart count.
	minDeadContainerInPod = 1
	// containerDeletorBufferLimit bounds the deletor's queue; a full queue drops work the
	// next GC redoes.
	containerDeletorBufferLimit = 50
)

// containerGCPolicy is the kubelet's default: no minimum age, one dead container per
// container of a pod, no node-wide limit.
var containerGCPolicy = container.GCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}

// podContainerDeletor removes dead containers in its own goroutine, so that the sync loop
// never waits for the runtime.
type podContainerDeletor struct {
	worker chan container.ContainerID
	keep   int
}

func newPodContainerDeletor(keep int) *podContainerDeletor {
	return &podContainerDeletor{worker: make(chan container.ContainerID, containerDeletorBufferLimit), keep: keep}
}

// run removes the queued containers until ctx ends (Run's goroutine).
func (d *podContainerDeletor) run(ctx context.Context, runtime interface {
	DeleteContainer(ctx context.Context, id container.ContainerID) error
}) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-d.worker:
			if err := runtime.DeleteContainer(ctx, id); err != nil {
				klog.FromContext(ctx).Error(err, "DeleteContainer returned error", "containerID", id)
			}
		}
	}
}

// deleteContainersInPod queues the dead instances of the container that just exited, all but
// the newest d.keep; with removeAll, every dead container of the pod.
func (d *podContainerDeletor) deleteContainersInPod(ctx context.Context, exitedContainerID string, status *container.PodStatus, removeAll bool) {
	keep, filter := d.keep, exitedContainerID
	if removeAll {
		keep, filter = 0, ""
	}
	for _, id := range containersToDelete(filter, status, keep) {
		select {
		case d.worker <- id:
		default:
			klog.FromContext(ctx).Info("Failed to issue the request to remove container", "containerID", id)
		}
	}
}

// containersToDelete picks the exited containers of the name filterID had (of every name when
// filterID is empty), all but the newest keep of each name.
func containersToDelete(filterID string, status *container.PodStatus, keep int) []container.ContainerID {
	name := ""
	if filterID != "" {
		for _, cs := range status.ContainerStatuses {
			if cs.ID.ID == filterID {
				name = cs.Name
			}
		}
		if name == "" {
			return nil
		}
	}
	byName := map[string][]*container.Status{}
	for _, cs := range status.ContainerStatuses {
		if cs.State == container.ContainerStateExited && (name == "" || cs.Name == name) {
			byName[cs.Name] = append(byName[cs.Name], cs)
		}
	}
	var out []container.ContainerID
	for _, dead := range byName {
		sort.Slice(dead, func(i, j int) bool { return dead[i].CreatedAt.After(dead[j].CreatedAt) })
		for i := keep; i < len(dead); i++ {
			out = append(out, dead[i].ID)
		}
	}
	return out
}

// cleanUpContainersInPod runs when a container died: the pod's surplus dead containers go,
// or all of them when the pod is evicted or deleted and stopped.
func (kl *Kubelet) cleanUpContainersInPod(ctx context.Context, podID types.UID, exitedContainerID string) {
	status, err := kl.podCache.Get(podID)
	if err != nil {
		return
	}
	kl.containerDeletor.deleteContainersInPod(ctx, exitedContainerID, status, kl.podWorkers.ShouldPodContentBeRemoved(podID))
}

// garbageCollect is the periodic sweep of dead containers, sandboxes and pod logs.
func (kl *Kubelet) garbageCollect(ctx context.Context) {
	if err := kl.runtime.GarbageCollect(ctx, containerGCPolicy, kl.podWorkers, kl.sourcesReady.AllReady()); err != nil {
		klog.FromContext(ctx).Error(err, "Container garbage collection failed")
		kl.recorder.Eventf(kl.nodeRef(), "Warning", "ContainerGCFailed", "%v", err)
	}
}

// imageGarbageCollect frees image space as the image GC policy says.
func (kl *Kubelet) imageGarbageCollect(ctx context.Context) {
	if err := kl.imageGC.GarbageCollect(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Image garbage collection failed")
		kl.recorder.Eventf(kl.nodeRef(), "Warning", "ImageGCFailed", "%v", err)
	}
}
