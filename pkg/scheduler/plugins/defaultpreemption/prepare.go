package defaultpreemption

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// prepareCandidate carries out the preemption on the chosen node: every victim is preempted
// (in parallel; the first failure stops the rest and fails the cycle), then lower-priority
// pods nominated to the node lose their nomination, since they may no longer fit there; the
// update moves them back to activeQ so that they look elsewhere sooner.
func (pl *Plugin) prepareCandidate(ctx context.Context, c *Candidate, preemptor *v1.Pod) *framework.Status {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	var (
		mu       sync.Mutex
		firstErr error
	)
	pl.fh.Parallelizer().Until(ctx, len(c.Victims), func(i int) {
		victim := c.Victims[i]
		if victim.DeletionTimestamp != nil {
			// Its graceful deletion has started already: another call would add nothing.
			logger.V(2).Info("Victim Pod is already being deleted, skipping the API call for it", "preemptor", klog.KObj(preemptor), "node", c.Node, "victim", klog.KObj(victim))
			return
		}
		if err := pl.preemptPod(ctx, c.Node, preemptor, victim); err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
				cancel()
			}
			mu.Unlock()
		}
	}, Name)
	mu.Lock()
	err := firstErr
	mu.Unlock()
	if err != nil {
		return framework.AsStatus(err)
	}

	if err := clearNominatedNodeName(ctx, pl.fh.ClientSet(), pl.lowerPriorityNominatedPods(preemptor, c.Node)...); err != nil {
		// Not fatal: those pods will find out in their own cycle.
		logger.Error(err, "Cannot clear 'NominatedNodeName' field")
	}
	return nil
}

// preemptPod removes one victim. A pod still held at Permit is only assumed, so it is
// rejected in memory (it goes back to the queue). A bound pod gets the DisruptionTarget
// condition, so that its controller and users see why it goes, and is deleted gracefully.
// A victim already gone is no error. Either way the victim gets a "Preempted" event.
func (pl *Plugin) preemptPod(ctx context.Context, node string, preemptor, victim *v1.Pod) error {
	logger := klog.FromContext(ctx)
	msg := fmt.Sprintf("Preempted by pod %v on node %v", preemptor.UID, node)
	if wp := pl.waitingPod(victim.UID); wp != nil {
		wp.Reject(Name, "preempted")
		logger.V(2).Info("Preemptor pod rejected a waiting pod", "preemptor", klog.KObj(preemptor), "waitingPod", klog.KObj(victim), "node", node)
		msg += " (in kube-scheduler memory)."
	} else {
		cs := pl.fh.ClientSet()
		newStatus := victim.Status.DeepCopy()
		if updatePodCondition(newStatus, DisruptionTargetCondition(preemptor.Spec.SchedulerName, victim.Generation)) {
			if err := patchPodStatus(ctx, cs, victim, newStatus); err != nil {
				if !apierrors.IsNotFound(err) {
					logger.Error(err, "Could not add DisruptionTarget condition due to preemption", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim))
					return err
				}
				logger.V(2).Info("Victim Pod is already deleted", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim), "node", node)
				return nil
			}
		}
		// The victim's own grace period, as the API server would apply it by default.
		opts := metav1.DeleteOptions{GracePeriodSeconds: victim.Spec.TerminationGracePeriodSeconds}
		if err := cs.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, opts); err != nil {
			if !apierrors.IsNotFound(err) {
				logger.Error(err, "Tried to preempted pod", "pod", klog.KObj(victim), "preemptor", klog.KObj(preemptor))
				return err
			}
			logger.V(2).Info("Victim Pod is already deleted", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim), "node", node)
			return nil
		}
		logger.V(2).Info("Preemptor Pod preempted victim Pod", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim), "node", node)
	}
	if r := pl.fh.EventRecorder(); r != nil {
		r.Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting", "%s", msg)
	}
	return nil
}

func (pl *Plugin) waitingPod(uid types.UID) framework.WaitingPod {
	if wps := pl.fh.WaitingPods(); wps != nil {
		return wps.GetWaitingPod(uid)
	}
	return nil
}

// DisruptionTargetCondition is the condition a victim gets before it is deleted.
func DisruptionTargetCondition(schedulerName string, observedGeneration int64) *v1.PodCondition {
	return &v1.PodCondition{
		Type:               v1.DisruptionTarget,
		ObservedGeneration: observedGeneration,
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonPreemptionByScheduler,
		Message:            fmt.Sprintf("%s: preempting to accommodate a higher priority pod", schedulerName),
	}
}

// updatePodCondition sets c in status (its transition time now, unless the status is
// unchanged) and reports whether anything changed.
func updatePodCondition(status *v1.PodStatus, c *v1.PodCondition) bool {
	c.LastTransitionTime = metav1.Now()
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if c.Status == old.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		same := c.Status == old.Status && c.Reason == old.Reason && c.Message == old.Message &&
			c.LastProbeTime.Equal(&old.LastProbeTime) && c.LastTransitionTime.Equal(&old.LastTransitionTime)
		*old = *c
		return !same
	}
	status.Conditions = append(status.Conditions, *c)
	return true
}

// lowerPriorityNominatedPods are the pods nominated to node with a priority below the
// preemptor's. Whether they would still fit is not worked out: there are few of them, and
// finding out would cost a filter run each.
func (pl *Plugin) lowerPriorityNominatedPods(preemptor *v1.Pod, node string) []*v1.Pod {
	n := pl.fh.Nominator()
	if n == nil {
		return nil
	}
	priority := corev1helpers.PodPriority(preemptor)
	var pods []*v1.Pod
	for _, pi := range n.NominatedPodsForNode(node) {
		if corev1helpers.PodPriority(pi.Pod) < priority {
			pods = append(pods, pi.Pod)
		}
	}
	return pods
}

// clearNominatedNodeName empties status.nominatedNodeName of pods.
func clearNominatedNodeName(ctx context.Context, cs kubernetes.Interface, pods ...*v1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.Status.NominatedNodeName == "" {
			continue
		}
		status := p.Status.DeepCopy()
		status.NominatedNodeName = ""
		if err := patchPodStatus(ctx, cs, p, status); err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// patchPodStatus sends the difference between pod's status and newStatus as a strategic
// merge patch of pods/status (conditions merge by type, so others' conditions are kept).
func patchPodStatus(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod, newStatus *v1.PodStatus) error {
	oldData, err := json.Marshal(v1.Pod{Status: pod.Status})
	if err != nil {
		return err
	}
	newData, err := json.Marshal(v1.Pod{Status: *newStatus})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &v1.Pod{})
	if err != nil {
		return fmt.Errorf("failed to create merge patch for pod %q/%q: %w", pod.Namespace, pod.Name, err)
	}
	if string(patch) == "{}" {
		return nil
	}
	return retry.OnError(retry.DefaultBackoff, retriableWithConflict, func() error {
		_, err := cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
}

// retriableWithConflict: the API server was briefly unreachable or overloaded, or the pod
// changed under us; the patch carries no resourceVersion, so sending it again is right.
func retriableWithConflict(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		utilnet.IsConnectionRefused(err) || apierrors.IsConflict(err)
}
