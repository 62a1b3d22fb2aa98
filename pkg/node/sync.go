package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/allocation"
	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/podstatus"
	"github.com/berth-cluster/berth/pkg/node/podworkers"
	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
)

var _ podworkers.PodSyncer = &Kubelet{}

// SyncPod is seed 003's syncPod, the transaction script of one pod's sync: report its status,
// give up if it is done, make sure its mirror pod and data directories exist, then let the
// runtime's SyncPod create the sandbox and the containers. It returns isTerminal once the pod
// has finished (every container done for good).
func (kl *Kubelet) SyncPod(ctx context.Context, updateType kubetypes.SyncPodType, pod, mirrorPod *v1.Pod, podStatus *container.PodStatus) (bool, error) {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("SyncPod enter", "pod", klog.KObj(pod), "updateType", updateType)
	if hook := syncPodTestHook.Load(); hook != nil {
		(*hook)(pod)
	}

	defer kl.metrics.ObservePodWorker(updateType.String(), time.Now())

	// A pod met for the first time runs at its allocation; a resize is in progress while the
	// runtime has not actuated the allocation.
	kl.initializeActuatedPod(logger, pod)
	kl.updateResizeInProgress(logger, pod, podStatus)

	apiPodStatus := kl.generateAPIPodStatus(pod, podStatus, false)
	if isTerminalPhase(apiPodStatus.Phase) {
		kl.statusManager.SetPodStatus(logger, pod, apiPodStatus)
		return true, nil
	}
	// Record the time it takes for the pod to become running, since it was first seen.
	if existing, ok := kl.statusManager.GetPodStatus(pod.UID); (!ok || existing.Phase != v1.PodRunning) && apiPodStatus.Phase == v1.PodRunning {
		kl.metrics.ObservePodStart(firstSeenTime(pod))
	}
	kl.statusManager.SetPodStatus(logger, pod, apiPodStatus)

	// Without a network the runtime cannot give the pod an IP; host-network pods can run.
	if err := kl.runtimeState.NetworkErrors(); err != nil && !pod.Spec.HostNetwork {
		kl.recorder.Eventf(pod, v1.EventTypeWarning, "NetworkNotReady", "network is not ready: %v", err)
		return false, fmt.Errorf("network is not ready: %w", err)
	}
	// A static pod runs whether or not its mirror pod can be written (the API server may be
	// down); a failed write makes the sync end in an error, so that the pod worker retries in
	// seconds rather than at the next minute's resync.
	var mirrorErr error
	if kubetypes.IsStaticPod(pod) {
		mirrorErr = kl.ensureMirrorPod(ctx, pod, mirrorPod)
	}
	// Ensure the pod is being probed.
	kl.probeManager.AddPod(pod)
	if err := kl.makePodDataDirs(pod); err != nil {
		kl.recorder.Eventf(pod, v1.EventTypeWarning, "FailedMountVolume", "error making pod data directories: %v", err)
		return false, err
	}
	result := kl.runtime.SyncPod(ctx, pod, podStatus, kl.pullSecretsFromAPI(ctx, pod), kl.crashLoopBackOff)
	kl.reasonCache.Update(pod.UID, result)
	if kl.handleResizeResults(logger, pod, podStatus, result) && result.Error() == nil {
		// Resized: the status shows the new resources, without PodResizeInProgress, now.
		kl.statusManager.SetPodStatus(logger, pod, kl.generateAPIPodStatus(pod, podStatus, false))
	}
	if startedContainers(result) {
		kl.startedContainers.Store(pod.UID, true)
	}
	if err := result.Error(); err != nil {
		// Say why at once (ErrImagePull, CrashLoopBackOff, ...), not at the next sync.
		kl.statusManager.SetPodStatus(logger, pod, kl.generateAPIPodStatus(pod, podStatus, false))
		return false, err
	}
	return false, mirrorErr
}

// PodSyncRecorded inspects a pod whose sync started containers as soon as the pod worker has
// recorded that sync: the status the user waits for (Running) is one inspection away, and
// the next sync must not wait up to a second for the PLEG's relist to see it.
func (kl *Kubelet) PodSyncRecorded(ctx context.Context, pod *v1.Pod) {
	if _, started := kl.startedContainers.LoadAndDelete(pod.UID); !started {
		return
	}
	kl.pleg.RelistPod(ctx, pod.UID, pod.Name, pod.Namespace)
}

// startedContainers reports whether SyncPod started any container.
func startedContainers(r container.PodSyncResult) bool {
	for _, sr := range r.SyncResults {
		if sr.Action == container.StartContainer && sr.Error == nil {
			return true
		}
	}
	return false
}

// SyncTerminatingPod stops every container of a pod with the grace period, then reports the
// pod's last status.
func (kl *Kubelet) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("SyncTerminatingPod enter", "pod", klog.KObj(pod))
	apiPodStatus := kl.generateAPIPodStatus(pod, podStatus, false)
	if podStatusFn != nil {
		podStatusFn(&apiPodStatus)
	}
	kl.statusManager.SetPodStatus(logger, pod, apiPodStatus)

	if err := kl.runtime.KillPod(ctx, pod, runningPod(podStatus), gracePeriod); err != nil {
		kl.recorder.Eventf(pod, v1.EventTypeWarning, "FailedKillPod", "error killing pod: %v", err)
		return fmt.Errorf("killing pod %s: %w", klog.KObj(pod), err)
	}
	// The runtime must confirm: a container that still runs would outlive its pod.
	after, err := kl.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("reading the status of pod %s after killing it: %w", klog.KObj(pod), err)
	}
	if running := after.GetRunningContainerStatuses(); len(running) > 0 {
		return fmt.Errorf("pod %s still has %d running containers after being killed", klog.KObj(pod), len(running))
	}
	final := kl.generateAPIPodStatus(pod, after, true)
	if podStatusFn != nil {
		podStatusFn(&final)
	}
	kl.statusManager.SetPodStatus(logger, pod, final)
	return nil
}

// SyncTerminatingRuntimePod stops a pod the runtime runs but no source knows.
func (kl *Kubelet) SyncTerminatingRuntimePod(ctx context.Context, pod *container.Pod) error {
	zero := int64(0)
	klog.FromContext(ctx).V(2).Info("Killing an orphaned pod", "pod", klog.KRef(pod.Namespace, pod.Name))
	return kl.runtime.KillPod(ctx, nil, *pod, &zero)
}

// SyncTerminatedPod reports the final status of a pod whose containers are all gone.
func (kl *Kubelet) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) error {
	logger := klog.FromContext(ctx)
	apiPodStatus := kl.generateAPIPodStatus(pod, podStatus, true)
	kl.statusManager.SetPodStatus(logger, pod, apiPodStatus)
	kl.statusManager.TerminatePod(logger, pod)
	kl.probeManager.RemovePod(pod)
	return nil
}

// generateAPIPodStatus turns the runtime's view of a pod into the pod's API status: its
// containers with the resources they run with, and its resize conditions (none once the pod
// is done).
func (kl *Kubelet) generateAPIPodStatus(pod *v1.Pod, podStatus *container.PodStatus, podIsTerminal bool) v1.PodStatus {
	oldStatus := pod.Status
	if s, ok := kl.statusManager.GetPodStatus(pod.UID); ok {
		oldStatus = s
	}
	if podIsTerminal {
		kl.allocation.ClearResizeConditions(pod.UID)
	}
	s := podstatus.GenerateAPIPodStatus(pod, podStatus, podIsTerminal, kl.reasonCache, kl.nodeIPs, oldStatus,
		podstatus.WithProbeResults(kl.probeManager),
		podstatus.WithActuatedResources(func(name string) (v1.ResourceRequirements, bool) { return kl.actuated.Container(pod.UID, name) }),
		podstatus.WithResizeConditions(kl.allocation.ResizeConditions(pod.UID)))
	kl.applyActiveDeadline(pod, &s, oldStatus)
	return s
}

// isAdmittedPodTerminal reports a pod that is done by the API's status or by the one the node
// agent has not written yet (a pod rejected at admission a moment ago).
func (kl *Kubelet) isAdmittedPodTerminal(pod *v1.Pod) bool {
	if isTerminalPhase(pod.Status.Phase) {
		return true
	}
	s, ok := kl.statusManager.GetPodStatus(pod.UID)
	return ok && isTerminalPhase(s.Phase)
}

func isTerminalPhase(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// runningPod is the runtime's pod as KillPod wants it.
func runningPod(s *container.PodStatus) container.Pod {
	p := container.Pod{}
	if s == nil {
		return p
	}
	p.ID, p.Name, p.Namespace = s.ID, s.Name, s.Namespace
	for _, c := range s.ContainerStatuses {
		if c.State != container.ContainerStateRunning {
			continue
		}
		p.Containers = append(p.Containers, &container.Container{ID: c.ID, Name: c.Name, Image: c.Image, ImageID: c.ImageID, Hash: c.Hash, State: c.State})
	}
	for _, sb := range s.SandboxStatuses {
		p.Sandboxes = append(p.Sandboxes, &container.Container{ID: container.ContainerID{Type: "containerd", ID: sb.Id}})
	}
	return p
}

// makePodDataDirs creates the pod's directory and its volumes and plugins subdirectories.
func (kl *Kubelet) makePodDataDirs(pod *v1.Pod) error {
	dir := filepath.Join(kl.podsDir(), string(pod.UID))
	for _, d := range []string{dir, filepath.Join(dir, "volumes"), filepath.Join(dir, "plugins"), filepath.Join(dir, "containers")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	return nil
}

// ensureMirrorPod keeps the API's copy of a static pod: created when missing, replaced when
// it belongs to an older version of the static pod or is being deleted.
func (kl *Kubelet) ensureMirrorPod(ctx context.Context, pod, mirrorPod *v1.Pod) error {
	logger := klog.FromContext(ctx)
	if mirrorPod != nil && (mirrorPod.DeletionTimestamp != nil || !isMirrorOf(mirrorPod, pod)) {
		uid := mirrorPod.UID
		if _, err := kl.mirrorClient.DeleteMirrorPod(ctx, kubetypes.GetPodFullName(mirrorPod), &uid); err != nil {
			logger.Error(err, "Deleting an outdated mirror pod", "pod", klog.KObj(mirrorPod))
		}
		mirrorPod = nil
	}
	if mirrorPod == nil {
		if err := kl.mirrorClient.CreateMirrorPod(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			logger.Error(err, "Creating a mirror pod", "pod", klog.KObj(pod))
			return err
		}
	}
	return nil
}

func isMirrorOf(mirrorPod, pod *v1.Pod) bool {
	return mirrorPod.Annotations[kubetypes.ConfigMirrorAnnotationKey] == pod.Annotations[kubetypes.ConfigHashAnnotationKey]
}

// HandlePodCleanups is the housekeeping of seed 000: stop the workers of pods that are gone,
// kill what the runtime runs for no known pod, forget statuses and directories of pods that
// are gone, and remove mirror pods without their static pod.
func (kl *Kubelet) HandlePodCleanups(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	allPods, mirrorPods, orphanedMirrors := kl.podManager.GetPodsAndMirrorPods()
	workingPods := kl.podWorkers.SyncKnownPods(allPods)

	known := map[types.UID]bool{}
	for _, p := range allPods {
		known[p.UID] = true
	}
	for _, p := range mirrorPods {
		known[p.UID] = true
	}
	kl.statusManager.RemoveOrphanedStatuses(logger, known)
	isKnown := func(uid types.UID) bool { return known[uid] }
	kl.allocation.RemoveOrphans(logger, isKnown)
	if err := kl.actuated.RemoveOrphans(isKnown); err != nil {
		logger.Error(err, "Failed to remove the actuated resources of orphaned pods")
	}
	kl.probeManager.CleanupPods(known)

	runtimePods, err := kl.runtime.GetPods(ctx, false)
	if err != nil {
		return fmt.Errorf("listing the runtime's pods: %w", err)
	}
	for _, rp := range runtimePods {
		if _, ok := workingPods[rp.ID]; ok {
			continue
		}
		if rp.IsEmpty() {
			continue
		}
		logger.V(2).Info("Cleaning up a pod the runtime runs but no source knows", "pod", klog.KRef(rp.Namespace, rp.Name), "podUID", rp.ID)
		kl.podWorkers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: kubetypes.SyncPodKill, RunningPod: rp})
	}

	// A desired pod no worker knows (its worker finished and forgot it) starts again.
	start := kl.clock.Now()
	for _, pod := range allPods {
		if _, ok := workingPods[pod.UID]; ok || kubetypes.IsMirrorPod(pod) || kl.isAdmittedPodTerminal(pod) {
			continue
		}
		mirrorPod, _ := kl.podManager.GetMirrorPodByPod(pod)
		kl.dispatchWork(pod, kubetypes.SyncPodCreate, mirrorPod, start)
	}

	for _, fullName := range orphanedMirrors {
		if kl.podWorkers.IsPodForMirrorPodTerminatingByFullName(fullName) {
			continue
		}
		if _, err := kl.mirrorClient.DeleteMirrorPod(ctx, fullName, nil); err != nil {
			logger.Error(err, "Deleting an orphaned mirror pod", "pod", fullName)
		}
	}
	kl.removeOrphanedPodDirs(ctx, known, workingPods)
	kl.crashLoopBackOff.GC()
	return nil
}

// removeOrphanedPodDirs removes the directories of pods no source knows and no worker holds.
func (kl *Kubelet) removeOrphanedPodDirs(ctx context.Context, known map[types.UID]bool, working map[types.UID]podworkers.PodWorkerSync) {
	// Names only, unsorted: this runs every 2 s and needs nothing else of the entries.
	dir, err := os.Open(kl.podsDir())
	if err != nil {
		return
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return
	}
	for _, name := range names {
		uid := types.UID(name)
		if known[uid] {
			continue
		}
		if _, ok := working[uid]; ok {
			continue
		}
		if err := kl.podDirs.RemovePodDir(name); err != nil {
			klog.FromContext(ctx).Error(err, "Removing an orphaned pod directory", "podUID", uid)
		}
	}
}

// pullSecretsFromAPI reads the secrets a pod names in imagePullSecrets; a missing one is
// reported and skipped, as the kubelet does.
func (kl *Kubelet) pullSecretsFromAPI(ctx context.Context, pod *v1.Pod) []v1.Secret {
	var out []v1.Secret
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		s, err := kl.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			kl.recorder.Eventf(pod, v1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
				"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", ref.Name)
			continue
		}
		out = append(out, *s)
	}
	return out
}

// firstSeenTime is when the node agent's config first saw the pod (its
// kubernetes.io/config.seen annotation); zero when it has none.
func firstSeenTime(pod *v1.Pod) time.Time {
	t, err := time.Parse(time.RFC3339Nano, pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey])
	if err != nil {
		return time.Time{}
	}
	return t
}

// initializeActuatedPod records a pod's allocation as actuated when nothing is recorded for
// it (its containers were created with it, or are yet to be).
func (kl *Kubelet) initializeActuatedPod(logger klog.Logger, pod *v1.Pod) {
	if _, ok := kl.actuated.Pod(pod.UID); ok {
		return
	}
	if err := kl.actuated.SetPod(pod.UID, allocation.ResourcesOf(pod)); err != nil {
		logger.Error(err, "Failed to initialize actuated pod resource info checkpoint", "pod", klog.KObj(pod))
	}
}

// updateResizeInProgress sets PodResizeInProgress while a running container's actuated
// resources differ from its allocation, and clears it, with a ResizeCompleted event, once
// none does. It reports whether it cleared it.
func (kl *Kubelet) updateResizeInProgress(logger klog.Logger, pod *v1.Pod, podStatus *container.PodStatus) bool {
	running := func(name string) bool {
		cs := podStatus.FindContainerStatusByName(name)
		return cs != nil && cs.State == container.ContainerStateRunning
	}
	actuated := func(name string) (v1.ResourceRequirements, bool) { return kl.actuated.Container(pod.UID, name) }
	if allocation.ResizeInProgress(pod, running, actuated) {
		kl.allocation.SetResizeInProgress(pod.UID, "", "", pod.Generation)
		return false
	}
	if generation, cleared := kl.allocation.ClearResizeInProgress(pod.UID); cleared {
		kl.recorder.Event(pod, v1.EventTypeNormal, allocation.EventResizeCompleted, allocation.ResizeCompletedMessage(logger, pod, generation))
		return true
	}
	return false
}

// handleResizeResults follows the runtime's resize: a failure is PodResizeInProgress with
// reason Error (and a ResizeError event); a success may complete the resize. It reports
// whether the resize completed.
func (kl *Kubelet) handleResizeResults(logger klog.Logger, pod *v1.Pod, podStatus *container.PodStatus, result container.PodSyncResult) bool {
	resized := false
	for _, r := range result.SyncResults {
		if r.Action != container.ResizePodInPlace {
			continue
		}
		if r.Error != nil {
			if generation, updated := kl.allocation.SetResizeInProgress(pod.UID, v1.PodReasonError, r.Message, pod.Generation); updated {
				kl.recorder.Event(pod, v1.EventTypeWarning, allocation.EventResizeError, allocation.ResizeErrorMessage(logger, pod, generation, r.Message))
			}
			return false
		}
		resized = true
	}
	return resized && kl.updateResizeInProgress(logger, pod, podStatus)
}
