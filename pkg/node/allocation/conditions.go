package allocation

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The resize conditions of a pod, which the node agent puts into every status it generates
// (the kubelet keeps them in its status manager). PodResizePending says a resize waits:
// reason Infeasible when the node can never hold it, Deferred otherwise. PodResizeInProgress
// says an accepted resize is not actuated yet (reason Error when actuating it failed). Each
// carries the generation of the spec it is about.

// ResizeConditions returns the pod's resize conditions: pending first, then in progress.
func (m *Manager) ResizeConditions(uid types.UID) []v1.PodCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []v1.PodCondition
	rc := m.conditions[uid]
	for _, c := range []*v1.PodCondition{rc.pending, rc.inProgress} {
		if c != nil {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}

// pendingReason is the reason a pending resize shows: Infeasible, or Deferred for any
// other reason a handler gave (OutOfcpu, ...).
func pendingReason(reason string) string {
	if reason != v1.PodReasonInfeasible {
		return v1.PodReasonDeferred
	}
	return reason
}

// setPending sets PodResizePending; it reports whether its reason or generation changed.
func (m *Manager) setPending(uid types.UID, reason, message string, generation int64) bool {
	reason = pendingReason(reason)
	m.mu.Lock()
	defer m.mu.Unlock()
	rc := m.conditions[uid]
	old := rc.pending
	rc.pending = m.condition(v1.PodResizePending, old, reason, message, generation)
	m.conditions[uid] = rc
	return old == nil || old.Reason != reason || old.ObservedGeneration != generation
}

func (m *Manager) clearPending(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rc := m.conditions[uid]
	rc.pending = nil
	m.setConditions(uid, rc)
}

// isPending reports PodResizePending with the reason.
func (m *Manager) isPending(uid types.UID, reason string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditions[uid].pending
	return c != nil && c.Reason == reason
}

// SetResizeInProgress sets PodResizeInProgress. A condition already there keeps its
// generation (clear it to start a new one) and, when reason and message are empty, its reason
// and message. It returns the condition's generation and whether it changed.
func (m *Manager) SetResizeInProgress(uid types.UID, reason, message string, generation int64) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rc := m.conditions[uid]
	old := rc.inProgress
	if old != nil {
		if reason == "" && message == "" {
			reason, message = old.Reason, old.Message
		}
		generation = old.ObservedGeneration
	}
	rc.inProgress = m.condition(v1.PodResizeInProgress, old, reason, message, generation)
	m.conditions[uid] = rc
	if old == nil {
		return generation, true
	}
	// Times aside.
	cmp := *old
	cmp.LastProbeTime, cmp.LastTransitionTime = rc.inProgress.LastProbeTime, rc.inProgress.LastTransitionTime
	return generation, !reflect.DeepEqual(&cmp, rc.inProgress)
}

// ClearResizeInProgress drops PodResizeInProgress; it returns the generation of the condition
// it dropped, and whether there was one.
func (m *Manager) ClearResizeInProgress(uid types.UID) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rc := m.conditions[uid]
	if rc.inProgress == nil {
		return 0, false
	}
	generation := rc.inProgress.ObservedGeneration
	rc.inProgress = nil
	m.setConditions(uid, rc)
	return generation, true
}

// ClearResizeConditions drops both conditions: the pod is done.
func (m *Manager) ClearResizeConditions(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conditions, uid)
}

func (m *Manager) setConditions(uid types.UID, rc resizeConditions) {
	if rc.pending == nil && rc.inProgress == nil {
		delete(m.conditions, uid)
		return
	}
	m.conditions[uid] = rc
}

// condition is a True resize condition; its transition time moves when its reason changes.
func (m *Manager) condition(t v1.PodConditionType, old *v1.PodCondition, reason, message string, generation int64) *v1.PodCondition {
	now := metav1.NewTime(m.cfg.Clock.Now())
	transition := now
	if old != nil && old.Reason == reason {
		transition = old.LastTransitionTime
	}
	return &v1.PodCondition{
		Type:               t,
		Status:             v1.ConditionTrue,
		LastProbeTime:      now,
		LastTransitionTime: transition,
		ObservedGeneration: generation,
		Reason:             reason,
		Message:            message,
	}
}

// backfillConditions takes the resize conditions of a pod's API status when the manager has
// none for it: a restarted node agent carries on with the resizes it had pending or under way.
func (m *Manager) backfillConditions(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.conditions[pod.UID]; ok {
		return
	}
	var rc resizeConditions
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case v1.PodResizePending:
			rc.pending = c.DeepCopy()
		case v1.PodResizeInProgress:
			rc.inProgress = c.DeepCopy()
		}
	}
	m.setConditions(pod.UID, rc)
}
