package node

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/podworkers"
)

var _ podworkers.PanicReporter = &Kubelet{}

// syncPodTestHook, when set (by tests only), is called at the start of every SyncPod: a test
// makes it panic to show that one pod's fault is contained.
var syncPodTestHook atomic.Pointer[func(pod *v1.Pod)]

// SetSyncPodTestHook makes every SyncPod of this process call f first, until the returned
// func restores the previous hook. It is for tests that inject a fault into one pod's sync.
func SetSyncPodTestHook(f func(pod *v1.Pod)) (restore func()) {
	old := syncPodTestHook.Swap(&f)
	return func() { syncPodTestHook.Store(old) }
}

// PodSyncPanicked reports a pod whose sync panicked in its status, the way a failed start is
// reported: each of its containers not running waits with the reason InternalError and the
// panic as message, until a sync starts it. The pod worker has already logged the stack,
// counted the panic and recorded the FailedSync event, and retries after the back-off.
func (kl *Kubelet) PodSyncPanicked(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, err error) {
	running := map[string]bool{}
	if podStatus != nil {
		for _, c := range podStatus.GetRunningContainerStatuses() {
			running[c.Name] = true
		}
	}
	var result container.PodSyncResult
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if running[c.Name] {
			continue
		}
		r := container.NewSyncResult(container.StartContainer, c.Name)
		r.Fail(container.ErrInternal, err.Error())
		result.AddSyncResult(r)
	}
	kl.reasonCache.Update(pod.UID, result)
	if podStatus == nil {
		podStatus = &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	kl.statusManager.SetPodStatus(klog.FromContext(ctx), pod, kl.generateAPIPodStatus(pod, podStatus, false))
}
