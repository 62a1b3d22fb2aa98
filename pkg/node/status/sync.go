package status

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The writer: the only part of the manager that talks to the API server.

// podSync is one status to write, to the API pod with UID apiUID.
type podSync struct {
	uid    types.UID
	apiUID types.UID
	status versionedStatus
}

// couldHaveRunningContainers asks the safety provider (none: nothing runs).
func (m *manager) couldHaveRunningContainers(pod *v1.Pod) bool {
	return m.safety != nil && m.safety.PodCouldHaveRunningContainers(pod)
}

// apiTarget resolves where a pod's status goes: the pod itself, or a static pod's mirror pod
// (ok is false while a static pod has none). known is the node agent's pod, if it has it.
func (m *manager) apiTarget(uid types.UID) (apiUID types.UID, known, apiCopy *v1.Pod, ok bool) {
	pod, found := m.podManager.GetPodByUID(uid)
	if !found {
		return uid, nil, nil, true
	}
	if nodetypes.IsStaticPod(pod) {
		mirror, hasMirror := m.podManager.GetMirrorPodByPod(pod)
		if !hasMirror {
			return "", pod, nil, false
		}
		return mirror.UID, pod, mirror, true
	}
	return uid, pod, pod, true
}

// syncBatch writes the statuses that need it and returns how many it tried: on a signal
// (all false) those changed since last written; periodically (all true) also those whose API
// copy drifted from ours and those of pods waiting to be deleted.
func (m *manager) syncBatch(ctx context.Context, all bool) int {
	logger := klog.FromContext(ctx)
	m.mu.RLock()
	snapshot := make(map[types.UID]versionedStatus, len(m.podStatuses))
	for uid, s := range m.podStatuses {
		snapshot[uid] = s
	}
	m.mu.RUnlock()

	var todo []podSync
	live := map[types.UID]bool{}
	for uid, s := range snapshot {
		apiUID, known, apiCopy, ok := m.apiTarget(uid)
		if !ok {
			logger.V(5).Info("Static pod does not have a corresponding mirror pod; skipping", "podUID", uid, "pod", klog.KRef(s.podNamespace, s.podName))
			continue
		}
		live[apiUID] = true
		written, wasWritten := m.apiStatusVersions[apiUID]
		switch {
		case !wasWritten || written < s.version:
			todo = append(todo, podSync{uid, apiUID, s})
		case !all:
		case known != nil && canBeDeleted(known, m.couldHaveRunningContainers(known)):
			todo = append(todo, podSync{uid, apiUID, s})
		case apiCopy != nil && m.drifted(apiUID, apiCopy, s):
			logger.V(3).Info("Pod status is inconsistent with cached status for pod, a reconciliation should be triggered", "pod", klog.KObj(apiCopy))
			delete(m.apiStatusVersions, apiUID)
			todo = append(todo, podSync{uid, apiUID, s})
		}
	}
	if all {
		maps.DeleteFunc(m.apiStatusVersions, func(uid types.UID, _ uint64) bool { return !live[uid] })
		maps.DeleteFunc(m.inSync, func(uid types.UID, _ syncedPair) bool { return !live[uid] })
	}
	for _, t := range todo {
		logger.V(5).Info("Sync pod status", "podUID", t.uid, "statusUID", t.apiUID, "version", t.status.version)
		// One pod's fault is that pod's: its status is not marked written, so the next
		// periodic batch tries it again; the others are written now.
		_ = panics.Call(ctx, Component, func() error { m.syncPod(ctx, t.uid, t.status); return nil })
	}
	return len(todo)
}

// drifted reports an API copy of the pod whose status differs from ours.
func (m *manager) drifted(apiUID types.UID, apiPod *v1.Pod, ours versionedStatus) bool {
	pair := syncedPair{apiPod.ResourceVersion, ours.version}
	if pair.resourceVersion != "" && m.inSync[apiUID] == pair {
		return false
	}
	theirs := apiPod.Status.DeepCopy()
	normalizeStatus(apiPod, theirs)
	if !statusEqual(theirs, &ours.status) {
		delete(m.inSync, apiUID)
		return true
	}
	m.inSync[apiUID] = pair
	return false
}

// syncPod writes one status: GET the pod, merge, PATCH what changed, and DELETE the pod when
// nothing of it can run any more.
func (m *manager) syncPod(ctx context.Context, uid types.UID, s versionedStatus) {
	logger := klog.FromContext(ctx)
	pods := m.client.CoreV1().Pods(s.podNamespace)
	apiPod, err := pods.Get(ctx, s.podName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		logger.V(3).Info("Pod does not exist on the server", "podUID", uid, "pod", klog.KRef(s.podNamespace, s.podName))
		return
	}
	if err != nil {
		logger.Error(err, "Failed to get status for pod", "podUID", uid, "pod", klog.KRef(s.podNamespace, s.podName))
		return
	}
	if translated := m.podManager.TranslatePodUID(apiPod.UID); translated != "" && translated != uid {
		logger.V(2).Info("Pod was deleted and then recreated, skipping status update", "pod", klog.KObj(apiPod), "oldPodUID", uid, "podUID", translated)
		m.deletePodStatus(uid)
		return
	}

	local := apiPod
	if p, ok := m.podManager.GetPodByUID(uid); ok {
		local = p
	}
	couldRun := m.couldHaveRunningContainers(local)
	merged, illegal := mergePodStatus(apiPod, apiPod.Status, s.status, couldRun, metav1.NewTime(m.clock.Now()))
	if illegal != nil {
		logger.Error(illegal, "Refusing to move a pod out of its terminal phase", "pod", klog.KObj(apiPod))
	}
	patch, unchanged, err := statusPatch(apiPod.UID, apiPod.Status, merged)
	if err != nil {
		logger.Error(err, "Failed to compute the status patch for pod", "pod", klog.KObj(apiPod))
		return
	}
	if unchanged {
		logger.V(3).Info("Status for pod is up-to-date", "pod", klog.KObj(apiPod), "statusVersion", s.version)
	} else {
		patched, err := pods.Patch(ctx, apiPod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			logger.Error(err, "Failed to update status for pod", "pod", klog.KObj(apiPod), "patch", string(patch))
			return
		}
		logger.V(3).Info("Status for pod updated successfully", "pod", klog.KObj(apiPod), "statusVersion", s.version, "patch", string(patch))
		apiPod = patched
	}
	m.apiStatusVersions[apiPod.UID] = s.version

	if !canBeDeleted(apiPod, couldRun) {
		return
	}
	grace := int64(0)
	err = pods.Delete(ctx, apiPod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      metav1.NewUIDPreconditions(string(apiPod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Info("Failed to delete status for pod", "pod", klog.KObj(apiPod), "err", err)
		return
	}
	logger.V(3).Info("Pod fully terminated and removed from etcd", "pod", klog.KObj(apiPod))
	m.deletePodStatus(uid)
}
