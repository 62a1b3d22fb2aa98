package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	frameworkruntime "github.com/berth-cluster/berth/pkg/scheduler/framework/runtime"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
)

// handleSchedulingFailure tells the user why a pod was not scheduled (a FailedScheduling
// event, and PodScheduled=False with the reason), records a nomination, and puts the pod back
// in the queue, where the plugins that rejected it decide which events bring it back.
func (s *Scheduler) handleSchedulingFailure(ctx context.Context, fwk *frameworkruntime.Framework, podInfo *framework.QueuedPodInfo,
	status *framework.Status, nominating *framework.NominatingInfo, start time.Time) {
	logger := klog.FromContext(ctx)
	pod := podInfo.Pod
	err := status.AsError()
	reason := v1.PodReasonSchedulerError
	var fitErr *FitError
	switch {
	case status.IsRejected():
		reason = v1.PodReasonUnschedulable
		metrics.PodUnschedulable(fwk.ProfileName(), metrics.SinceInSeconds(start))
	default:
		metrics.PodScheduleError(fwk.ProfileName(), metrics.SinceInSeconds(start))
	}
	podInfo.PendingPlugins = nil
	if errors.As(err, &fitErr) {
		podInfo.UnschedulablePlugins = fitErr.Diagnosis.UnschedulablePlugins
		podInfo.PendingPlugins = fitErr.Diagnosis.PendingPlugins
	} else if status.IsRejected() && status.Plugin() != "" {
		podInfo.UnschedulablePlugins = sets.New(status.Plugin())
	} else {
		// An error: no plugin to wait for; the pod backs off and tries again.
		podInfo.UnschedulablePlugins = nil
	}
	msg := truncateMessage(err.Error())
	logger.V(2).Info("Unable to schedule pod; waiting", "pod", klog.KObj(pod), "err", msg)

	// The pod may have been deleted, or bound by someone else, while it was being scheduled.
	current, getErr := s.podLister(pod)
	if getErr != nil || current.Spec.NodeName != "" {
		s.Queue.Done(pod.UID)
	} else {
		podInfo.PodInfo = framework.NewPodInfo(current.DeepCopy())
		// Nominate before handing the pod back: from then on the queue owns podInfo.
		if nominating.Mode() == framework.ModeOverride && nominating.NominatedNodeName != "" {
			s.Queue.AddNominatedPod(podInfo.PodInfo, nominating)
		}
		if err := s.Queue.AddUnschedulableIfNotPresent(logger, podInfo, s.Queue.SchedulingCycle()); err != nil {
			logger.Error(err, "Requeueing a pod", "pod", klog.KObj(pod))
		}
		s.Queue.Done(pod.UID)
	}
	fwk.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", msg)
	condition := &v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
	if err := s.updatePod(ctx, pod, condition, nominating); err != nil {
		logger.Error(err, "Updating the status of an unschedulable pod", "pod", klog.KObj(pod))
	}
}

// truncateMessage keeps a message within what an event's note may hold.
func truncateMessage(msg string) string {
	const max = 1024
	if len(msg) <= max {
		return msg
	}
	return msg[:max-3] + "..."
}

// podLister reads the latest version of pod from the informer's cache.
func (s *Scheduler) podLister(pod *v1.Pod) (*v1.Pod, error) {
	return s.pods.Pods(pod.Namespace).Get(pod.Name)
}

// updatePod writes the PodScheduled condition and the nomination to pods/status, with a
// strategic merge patch, and only when something changes.
func (s *Scheduler) updatePod(ctx context.Context, pod *v1.Pod, condition *v1.PodCondition, nominating *framework.NominatingInfo) error {
	newStatus := pod.Status.DeepCopy()
	changed := setPodCondition(newStatus, condition)
	if nominating.Mode() == framework.ModeOverride && newStatus.NominatedNodeName != nominating.NominatedNodeName {
		newStatus.NominatedNodeName = nominating.NominatedNodeName
		changed = true
	}
	if !changed {
		return nil
	}
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
		return err
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	return err
}

// setPodCondition sets c, moving lastTransitionTime only when the status flips, and reports
// whether anything changed.
func setPodCondition(status *v1.PodStatus, c *v1.PodCondition) bool {
	now := metav1.Now()
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
			return false
		}
		if old.Status != c.Status {
			old.LastTransitionTime = now
		}
		old.Status, old.Reason, old.Message, old.ObservedGeneration = c.Status, c.Reason, c.Message, c.ObservedGeneration
		return true
	}
	cc := *c
	cc.LastTransitionTime = now
	status.Conditions = append(status.Conditions, cc)
	return true
}
