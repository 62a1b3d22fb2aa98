// Package node is berth's node agent, built as seeds 000, 001 and 003 walk through the
// kubelet: Run starts the modules (initializeModules, node status and Lease, updateRuntimeUp,
// the status manager, PLEG) and enters syncLoop, whose syncLoopIteration takes pod updates
// from the config sources, PLEG's events, the 1 s sync tick and the 2 s housekeeping tick, and
// hands pods to the pod workers; a pod worker runs syncPod, and syncPod the runtime's SyncPod.
//
// The Kubelet type here only composes; each part is a package of its own (config, podmanager,
// podworkers, admission, kuberuntime, pleg, status, podstatus, nodestatus, server) and sees
// only the narrow interfaces it needs.
package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/admission"
	"github.com/berth-cluster/berth/pkg/node/allocation"
	"github.com/berth-cluster/berth/pkg/node/clustertrustbundle"
	"github.com/berth-cluster/berth/pkg/node/config"
	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/envvars"
	"github.com/berth-cluster/berth/pkg/node/eviction"
	"github.com/berth-cluster/berth/pkg/node/images"
	"github.com/berth-cluster/berth/pkg/node/logs"
	"github.com/berth-cluster/berth/pkg/node/metrics"
	"github.com/berth-cluster/berth/pkg/node/mirror"
	"github.com/berth-cluster/berth/pkg/node/nodestatus"
	"github.com/berth-cluster/berth/pkg/node/objectcache"
	"github.com/berth-cluster/berth/pkg/node/oom"
	"github.com/berth-cluster/berth/pkg/node/pleg"
	"github.com/berth-cluster/berth/pkg/node/podcertificate"
	"github.com/berth-cluster/berth/pkg/node/podmanager"
	"github.com/berth-cluster/berth/pkg/node/podstatus"
	"github.com/berth-cluster/berth/pkg/node/podworkers"
	"github.com/berth-cluster/berth/pkg/node/prober"
	"github.com/berth-cluster/berth/pkg/node/prober/results"
	"github.com/berth-cluster/berth/pkg/node/runtimeclass"
	"github.com/berth-cluster/berth/pkg/node/stats"
	"github.com/berth-cluster/berth/pkg/node/status"
	"github.com/berth-cluster/berth/pkg/node/token"
	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/node/volume"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The kubelet's periods (DESIGN.md's defaults).
const (
	// housekeepingPeriod is how often HandlePodCleanups runs.
	housekeepingPeriod = 2 * time.Second
	// runtimeCheckPeriod is how often updateRuntimeUp asks the runtime's health.
	runtimeCheckPeriod = 5 * time.Second
	// syncPeriod is how often the sync tick asks the work queue for due pods.
	syncPeriod = time.Second
)

// Kubelet composes the node agent's parts. It owns no state of its own beyond the parts.
type Kubelet struct {
	nodeName string
	nodeIPs  []net.IP
	rootDir  string
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.WithTicker

	podManager    *podmanager.Manager
	podWorkers    podworkers.PodWorkers
	workQueue     podworkers.WorkQueue
	statusManager status.Manager
	probeManager  *prober.Manager
	volumeManager *volume.Manager
	// objects are the volumes' ConfigMaps and Secrets, each watched while pods read it.
	objects *objectcache.Cache
	// trustBundles and podCertificates answer the projected volumes' clusterTrustBundle and
	// podCertificate sources.
	trustBundles    *clustertrustbundle.Manager
	podCertificates *podcertificate.Manager
	// tokens are the projected volumes' service-account tokens; ownTokens: Run runs its
	// clean-up.
	tokens    *token.Manager
	ownTokens bool
	imageGC   *images.GCManager
	// imageList is the node's images for its status, refreshed every 30 s.
	imageList *images.List
	// services feed the containers' service variables; ownServices: Run runs the informer
	// (berth sim runs one for all its nodes).
	services    *envvars.Services
	ownServices bool
	// runtimeClasses say which CRI handler a runtimeClassName stands for; own: Run runs
	// the informer.
	runtimeClasses    *runtimeclass.Manager
	ownRuntimeClasses bool
	eviction          *eviction.Manager
	oomWatcher        *oom.Watcher
	metrics           *metrics.Metrics
	statsProvider     *stats.Provider
	// containerLogManager rotates the containers' logs.
	containerLogManager *logs.Manager
	imageGCPeriod       time.Duration
	runtime             container.Runtime
	// podDirs removes a pod's directory, unmounting its tmpfs volumes first (the runtime
	// manager's).
	podDirs       interface{ RemovePodDir(uid string) error }
	pleg          lifecycleEvents
	podCache      pleg.Cache
	admitHandlers []admission.PodAdmitHandler
	// allocation holds the resources granted to each pod, and its resizes.
	allocation *allocation.Manager
	// actuated holds the resources the runtime applied to each container (the runtime
	// manager writes it).
	actuated     *allocation.Store
	nodeStatus   *nodestatus.Controller
	runtimeState *nodestatus.RuntimeState
	sourcesReady config.SourcesReady
	mirrorClient mirror.Client
	reasonCache  *podstatus.ReasonCache
	// crashLoopBackOff is the restart back-off of containers (10 s doubling to 5 min).
	crashLoopBackOff *flowcontrol.Backoff
	// containerDeletor removes a pod's surplus dead containers when one dies.
	containerDeletor *podContainerDeletor
	// startedContainers marks pods whose last sync started containers (types.UID → true).
	startedContainers sync.Map
}

// Run is seed 000's Run: it starts the modules that do not depend on the runtime, then the
// periodic work, then enters syncLoop until ctx ends or the updates end. It returns once
// every goroutine it started has ended. Each of them, and syncLoop, comes back after a
// panic (panics.Forever): one bad pod must not stop the node's status, its PLEG or its sync.
func (kl *Kubelet) Run(ctx context.Context, updates <-chan kubetypes.PodUpdate) error {
	logger := klog.FromContext(ctx)
	if err := kl.initializeModules(ctx); err != nil {
		kl.recorder.Event(kl.nodeRef(), v1.EventTypeWarning, "KubeletSetupFailed", err.Error())
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: a sync loop that ends stops the rest
	forever := func(component string, f func(context.Context)) {
		wg.Go(func() { panics.Forever(ctx, component, f) })
	}
	every := func(component string, period time.Duration, f func(context.Context)) {
		forever(component, func(ctx context.Context) { kl.every(ctx, period, f) })
	}

	forever("nodestatus", kl.nodeStatus.Run)
	if kl.ownServices {
		// Not under panics.Forever: an informer runs only once; Run recovers a panic itself.
		wg.Go(func() { kl.services.Run(ctx) })
	}
	if kl.ownRuntimeClasses {
		wg.Go(func() { kl.runtimeClasses.Run(ctx) })
	}
	every("runtime-check", runtimeCheckPeriod, kl.updateRuntimeUp)
	wg.Go(func() { kl.statusManager.Run(ctx) }) // it comes back from a panic itself
	forever("pleg", kl.pleg.Run)
	forever("podworkers", kl.podWorkers.Run)
	kl.containerDeletor = newPodContainerDeletor(minDeadContainerInPod)
	forever("container-deletor", func(ctx context.Context) { kl.containerDeletor.run(ctx, kl.runtime) })
	every("container-gc", containerGCPeriod, kl.garbageCollect)
	if kl.ownTokens {
		forever("token-manager", kl.tokens.Run)
	}
	forever("object-cache", kl.objects.Run)
	forever("cluster-trust-bundles", kl.trustBundles.Run)
	forever("pod-certificates", kl.podCertificates.Run)
	forever("volume-manager", func(ctx context.Context) { kl.volumeManager.Run(ctx, kl.podWorkers.CouldHaveRunningContainers) })
	forever("allocation", func(ctx context.Context) { kl.allocation.Run(ctx, kl.syncResizedPod) })
	every("image-gc", kl.imageGCPeriod, kl.imageGarbageCollect)
	forever("image-list", kl.imageList.Run)
	if kl.eviction != nil {
		forever("eviction", kl.eviction.Run)
	}
	if kl.containerLogManager != nil {
		forever("container-log-manager", kl.containerLogManager.Run)
	}
	logger.Info("Starting kubelet main sync loop")
	// A sync loop that ends by itself (ctx, or the updates closed) ends Run; one that panics
	// comes back.
	panics.Forever(ctx, "syncloop", func(ctx context.Context) {
		kl.syncLoop(ctx, updates)
		cancel()
	})
	return nil
}

// lifecycleEvents is what Run and the sync loop use of the PLEG: its loop, its events, and
// the inspection of one pod on demand (PodSyncRecorded).
type lifecycleEvents interface {
	Run(ctx context.Context)
	Watch() chan *pleg.PodLifecycleEvent
	RelistPod(ctx context.Context, uid types.UID, name, namespace string)
}

// initializeModules makes the data directories the rest expects and starts the OOM
// watcher. A node agent that cannot read the kernel log runs on without SystemOOM events.
func (kl *Kubelet) initializeModules(ctx context.Context) error {
	for _, dir := range []string{kl.rootDir, kl.podsDir(), filepath.Join(kl.rootDir, "plugins")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	if kl.oomWatcher != nil {
		if err := kl.oomWatcher.Start(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to start the OOM watcher; SystemOOM events will not be recorded")
		}
	}
	return nil
}

func (kl *Kubelet) every(ctx context.Context, period time.Duration, f func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// updateRuntimeUp is seed 000's: it asks the runtime whether it and its network are ready, and
// records the answer for the node's Ready condition.
func (kl *Kubelet) updateRuntimeUp(ctx context.Context) {
	logger := klog.FromContext(ctx)
	s, err := kl.runtime.Status(ctx)
	if err != nil {
		logger.Error(err, "Container runtime sanity check failed")
		kl.runtimeState.SetRuntimeState(fmt.Errorf("container runtime is down: %w", err))
		return
	}
	if c := s.GetRuntimeCondition(container.NetworkReady); c == nil || !c.Status {
		kl.runtimeState.SetNetworkState(fmt.Errorf("container runtime network not ready: %s", describeCondition(container.NetworkReady, c)))
	} else {
		kl.runtimeState.SetNetworkState(nil)
	}
	if c := s.GetRuntimeCondition(container.RuntimeReady); c == nil || !c.Status {
		kl.runtimeState.SetRuntimeState(fmt.Errorf("container runtime not ready: %s", describeCondition(container.RuntimeReady, c)))
		return
	}
	kl.runtimeState.SetRuntimeState(nil)
	kl.runtimeState.SetRuntimeSync(kl.clock.Now())
}

func describeCondition(t string, c *container.RuntimeCondition) string {
	if c == nil {
		return t + "=false reason:NotReported message:the runtime did not report it"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", t, c.Status, c.Reason, c.Message)
}

// syncLoop is seed 000's: one syncLoopIteration after another until ctx ends.
func (kl *Kubelet) syncLoop(ctx context.Context, updates <-chan kubetypes.PodUpdate) {
	syncTicker := kl.clock.NewTicker(syncPeriod)
	defer syncTicker.Stop()
	housekeepingTicker := kl.clock.NewTicker(housekeepingPeriod)
	defer housekeepingTicker.Stop()
	plegCh := kl.pleg.Watch()
	for kl.syncLoopIteration(ctx, updates, syncTicker.C(), housekeepingTicker.C(), plegCh) {
	}
}

// syncLoopIteration waits on every source of work and hands what comes to the handlers, as
// seed 000 shows it: configCh, plegCh, syncCh, the liveness, readiness and startup result
// channels, housekeepingCh.
func (kl *Kubelet) syncLoopIteration(ctx context.Context, configCh <-chan kubetypes.PodUpdate,
	syncCh <-chan time.Time, housekeepingCh <-chan time.Time, plegCh <-chan *pleg.PodLifecycleEvent) bool {
	logger := klog.FromContext(ctx)
	select {
	case <-ctx.Done():
		return false
	case u, open := <-configCh:
		if !open {
			logger.Error(nil, "Update channel is closed, exiting the sync loop")
			return false
		}
		switch u.Op {
		case kubetypes.ADD:
			logger.V(2).Info("SyncLoop ADD", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			kl.HandlePodAdditions(ctx, u.Pods)
		case kubetypes.UPDATE:
			logger.V(2).Info("SyncLoop UPDATE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			kl.HandlePodUpdates(ctx, u.Pods)
		case kubetypes.REMOVE:
			logger.V(2).Info("SyncLoop REMOVE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			kl.HandlePodRemoves(ctx, u.Pods)
		case kubetypes.RECONCILE:
			logger.V(4).Info("SyncLoop RECONCILE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			kl.HandlePodReconcile(ctx, u.Pods)
		case kubetypes.DELETE:
			logger.V(2).Info("SyncLoop DELETE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			// A graceful deletion is an update: the pod worker starts terminating the pod.
			kl.HandlePodUpdates(ctx, u.Pods)
		default:
			logger.Error(nil, "Invalid operation", "op", u.Op)
		}
		kl.sourcesReady.AddSource(u.Source)
	case e := <-plegCh:
		if isSyncPodWorthy(e) {
			if pod, ok := kl.podManager.GetPodByUID(e.ID); ok {
				logger.V(2).Info("SyncLoop (PLEG)", "pod", klog.KObj(pod), "event", e.Type)
				kl.HandlePodSyncs(ctx, []*v1.Pod{pod})
			} else {
				logger.V(4).Info("SyncLoop (PLEG): ignore irrelevant event", "event", e)
			}
		}
		if e.Type == pleg.ContainerDied {
			if containerID, ok := e.Data.(string); ok {
				kl.cleanUpContainersInPod(ctx, e.ID, containerID)
			}
		}
	case <-syncCh:
		pods := kl.getPodsToSync()
		if len(pods) > 0 {
			logger.V(4).Info("SyncLoop (SYNC) pods", "total", len(pods), "pods", klog.KObjSlice(pods))
			kl.HandlePodSyncs(ctx, pods)
		}
	case update := <-kl.probeManager.LivenessUpdates():
		if update.Result == results.Failure {
			kl.handleProbeSync(ctx, update, "liveness", "unhealthy")
		}
	case update := <-kl.probeManager.ReadinessUpdates():
		ready := update.Result == results.Success
		kl.statusManager.SetContainerReadiness(logger, update.PodUID, update.ContainerID, ready)
		status := "not ready"
		if ready {
			status = "ready"
		}
		kl.handleProbeSync(ctx, update, "readiness", status)
	case update := <-kl.probeManager.StartupUpdates():
		started := update.Result == results.Success
		kl.statusManager.SetContainerStartup(logger, update.PodUID, update.ContainerID, started)
		status := "unhealthy"
		if started {
			status = "started"
			kl.probeManager.Trigger(update.PodUID) // readiness and liveness may begin
		}
		kl.handleProbeSync(ctx, update, "startup", status)
	case <-housekeepingCh:
		if !kl.sourcesReady.AllReady() {
			logger.V(4).Info("SyncLoop (housekeeping, skipped): sources aren't ready yet")
			break
		}
		if err := kl.HandlePodCleanups(ctx); err != nil {
			logger.Error(err, "Failed cleaning pods")
		}
	}
	return true
}

// handleProbeSync syncs the pod whose probe verdict changed: a failed liveness or startup
// probe restarts the container; readiness changes the pod's status.
func (kl *Kubelet) handleProbeSync(ctx context.Context, update results.Update, probe, status string) {
	pod, ok := kl.podManager.GetPodByUID(update.PodUID)
	if !ok {
		klog.FromContext(ctx).V(4).Info("SyncLoop (probe): ignore irrelevant update", "probe", probe, "status", status, "update", update)
		return
	}
	klog.FromContext(ctx).V(1).Info("SyncLoop (probe)", "probe", probe, "status", status, "pod", klog.KObj(pod))
	kl.HandlePodSyncs(ctx, []*v1.Pod{pod})
}

// isSyncPodWorthy: a container's removal needs no sync; everything else does.
func isSyncPodWorthy(e *pleg.PodLifecycleEvent) bool {
	return e.Type != pleg.ContainerRemoved
}

// podsToMeasure are the pods the eviction manager watches: admitted, not done, and not
// already being stopped.
func (kl *Kubelet) podsToMeasure() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range kl.activePods(&v1.Pod{}) {
		if !kl.podWorkers.IsPodTerminationRequested(p.UID) {
			out = append(out, p)
		}
	}
	return out
}

// getPodsToSync returns the pods whose work is due: back-off expired, periodic resync, or
// past their active deadline (the PodSyncLoopHandlers).
func (kl *Kubelet) getPodsToSync() []*v1.Pod {
	due := sets.New(kl.workQueue.GetWork()...)
	var pods []*v1.Pod
	for _, pod := range kl.podManager.Pods() {
		if due.Has(pod.UID) || (kl.pastActiveDeadline(pod) && !kl.podWorkers.IsPodTerminationRequested(pod.UID)) {
			pods = append(pods, pod)
		}
	}
	return pods
}

// HandlePodAdditions admits new pods (canAdmitPod) and hands them to their workers, oldest
// first, as seed 003 describes.
func (kl *Kubelet) HandlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	start := kl.clock.Now()
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	for _, pod := range pods {
		kl.podManager.AddPod(pod)
		if kubetypes.IsMirrorPod(pod) {
			kl.handleMirrorPod(ctx, pod, start)
			continue
		}
		if !kl.podWorkers.IsPodTerminationRequested(pod.UID) {
			// Admitted at the resources it was granted before (a restart) or its spec's.
			if ok, reason, message := kl.allocation.AddPod(klog.FromContext(ctx), pod, kl.activePods(pod)); !ok {
				kl.rejectPod(ctx, pod, reason, message)
				continue
			}
		}
		mirrorPod, _ := kl.podManager.GetMirrorPodByPod(pod)
		kl.dispatchWork(pod, kubetypes.SyncPodCreate, mirrorPod, start)
	}
	// Resizes left pending (by a restart) are tried once every pod is back, so that none is
	// accepted on resources another pod holds.
	for _, pod := range kl.allocation.RetryPendingResizes(ctx) {
		kl.syncResizedPod(pod)
	}
}

// HandlePodUpdates hands changed pods to their workers.
func (kl *Kubelet) HandlePodUpdates(ctx context.Context, pods []*v1.Pod) {
	start := kl.clock.Now()
	for _, pod := range pods {
		kl.podManager.UpdatePod(pod)
		if kubetypes.IsMirrorPod(pod) {
			kl.handleMirrorPod(ctx, pod, start)
			continue
		}
		kl.volumeManager.UpdatePod(pod)
		// A new size of the pod's containers: a resize to accept, or to leave pending.
		kl.allocation.HandlePodUpdate(ctx, pod)
		if isTerminalPhase(pod.Status.Phase) {
			kl.allocation.TriggerRetry() // its resources are free
		}
		mirrorPod, _ := kl.podManager.GetMirrorPodByPod(pod)
		kl.dispatchWork(pod, kubetypes.SyncPodUpdate, mirrorPod, start)
	}
}

// HandlePodRemoves stops pods that left their source.
func (kl *Kubelet) HandlePodRemoves(ctx context.Context, pods []*v1.Pod) {
	start := kl.clock.Now()
	for _, pod := range pods {
		kl.podManager.RemovePod(pod)
		kl.probeManager.RemovePod(pod)
		kl.tokens.DeleteServiceAccountToken(pod.UID)
		if kubetypes.IsMirrorPod(pod) {
			kl.handleMirrorPod(ctx, pod, start)
			continue
		}
		kl.podWorkers.UpdatePod(podworkers.UpdatePodOptions{
			Pod:        pod,
			UpdateType: kubetypes.SyncPodKill,
			StartTime:  start,
		})
		kl.allocation.RemovePod(klog.FromContext(ctx), pod.UID)
	}
	// The resources of the pods that left may make room for a pending resize.
	kl.allocation.TriggerRetry()
}

// HandlePodReconcile records a pod whose status changed at its source. When someone else
// changed a readiness gate's condition, the pod's Ready condition no longer holds: the pod
// is synced at once, so that Ready follows the gate rather than wait for the next resync.
func (kl *Kubelet) HandlePodReconcile(ctx context.Context, pods []*v1.Pod) {
	start := kl.clock.Now()
	for _, pod := range pods {
		kl.podManager.UpdatePod(pod)
		// A mirror pod's status is the static pod's, which holds no one else's conditions.
		if !kubetypes.IsMirrorPod(pod) && podstatus.NeedToReconcilePodReadiness(pod) {
			mirrorPod, _ := kl.podManager.GetMirrorPodByPod(pod)
			kl.dispatchWork(pod, kubetypes.SyncPodSync, mirrorPod, start)
		}
	}
}

// HandlePodSyncs resyncs pods.
func (kl *Kubelet) HandlePodSyncs(ctx context.Context, pods []*v1.Pod) {
	start := kl.clock.Now()
	for _, pod := range pods {
		if kubetypes.IsMirrorPod(pod) {
			continue
		}
		mirrorPod, _ := kl.podManager.GetMirrorPodByPod(pod)
		kl.dispatchWork(pod, kubetypes.SyncPodSync, mirrorPod, start)
	}
}

// handleMirrorPod syncs the static pod a mirror pod belongs to: a deleted mirror pod is
// recreated by that sync.
func (kl *Kubelet) handleMirrorPod(ctx context.Context, mirrorPod *v1.Pod, start time.Time) {
	if pod, ok := kl.podManager.GetPodByMirrorPod(mirrorPod); ok {
		kl.dispatchWork(pod, kubetypes.SyncPodUpdate, mirrorPod, start)
	}
}

// dispatchWork hands a pod to its worker, with the resources the node allocated it: a
// resize the node has not accepted changes nothing yet.
func (kl *Kubelet) dispatchWork(pod *v1.Pod, syncType kubetypes.SyncPodType, mirrorPod *v1.Pod, start time.Time) {
	pod, _ = kl.allocation.UpdatePodFromAllocation(pod)
	kl.podWorkers.UpdatePod(podworkers.UpdatePodOptions{
		Pod:        pod,
		MirrorPod:  mirrorPod,
		UpdateType: syncType,
		StartTime:  start,
	})
}

// syncResizedPod syncs a pod whose resize the allocation manager accepted or whose resize
// conditions changed.
func (kl *Kubelet) syncResizedPod(pod *v1.Pod) {
	if pod, ok := kl.podManager.GetPodByUID(pod.UID); ok {
		mirrorPod, _ := kl.podManager.GetMirrorPodByPod(pod)
		kl.dispatchWork(pod, kubetypes.SyncPodUpdate, mirrorPod, kl.clock.Now())
	}
}

// activePods are the admitted pods that still hold resources, other than pod itself.
func (kl *Kubelet) activePods(except *v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range kl.podManager.Pods() {
		if p.UID == except.UID || kl.podWorkers.IsPodKnownTerminated(p.UID) {
			continue
		}
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		out = append(out, p)
	}
	return out
}

// canAdmitPod asks every admit handler; the first refusal wins.
func (kl *Kubelet) canAdmitPod(pods []*v1.Pod, pod *v1.Pod) (bool, string, string) {
	attrs := &admission.PodAdmitAttributes{Pod: pod, OtherPods: pods}
	for _, h := range kl.admitHandlers {
		if r := h.Admit(attrs); !r.Admit {
			return false, r.Reason, r.Message
		}
	}
	return true, "", ""
}

// rejectPod ends a pod the node cannot run: Failed, with the reason, and an event.
func (kl *Kubelet) rejectPod(ctx context.Context, pod *v1.Pod, reason, message string) {
	kl.recorder.Event(pod, v1.EventTypeWarning, reason, message)
	st := pod.Status.DeepCopy()
	st.Phase = v1.PodFailed
	st.Reason = reason
	st.Message = "Pod was rejected: " + message
	kl.statusManager.SetPodStatus(klog.FromContext(ctx), pod, *st)
}

func (kl *Kubelet) podsDir() string { return filepath.Join(kl.rootDir, "pods") }

func (kl *Kubelet) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: kl.nodeName, UID: types.UID(kl.nodeName)}
}
