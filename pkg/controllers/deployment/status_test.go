package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestCalculateStatus(t *testing.T) {
	d := newDeployment("web", 4, ints(1), ints(1))
	d.Generation = 3
	d.Status.CollisionCount = ptr.To[int32](2)
	old := newRS("old", 2, t0.Add(-time.Hour))
	old.Status.ObservedGeneration, old.Status.TerminatingReplicas = 1, ptr.To[int32](1)
	nrs := newRS("new", 3, t0)
	nrs.Status.ReadyReplicas, nrs.Status.AvailableReplicas = 2, 1
	nrs.Status.ObservedGeneration, nrs.Status.TerminatingReplicas = 1, ptr.To[int32](0)

	s := calculateStatus([]*appsv1.ReplicaSet{old, nrs}, nrs, d, t0)
	want := appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 5, UpdatedReplicas: 3, ReadyReplicas: 4,
		AvailableReplicas: 3, UnavailableReplicas: 2, TerminatingReplicas: ptr.To[int32](1), CollisionCount: ptr.To[int32](2)}
	s2 := s
	s2.Conditions = nil
	if got := s2; got.ObservedGeneration != want.ObservedGeneration || got.Replicas != want.Replicas ||
		got.UpdatedReplicas != want.UpdatedReplicas || got.ReadyReplicas != want.ReadyReplicas ||
		got.AvailableReplicas != want.AvailableReplicas || got.UnavailableReplicas != want.UnavailableReplicas ||
		*got.TerminatingReplicas != 1 || *got.CollisionCount != 2 {
		t.Errorf("status = %+v, want %+v", got, want)
	}
	// 3 available of 4, one may be unavailable.
	if c := getCondition(s, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue || c.Reason != MinimumReplicasAvailable ||
		c.Message != "Deployment has minimum availability." {
		t.Errorf("Available = %+v", c)
	}
	nrs.Status.AvailableReplicas = 0
	s = calculateStatus([]*appsv1.ReplicaSet{old, nrs}, nrs, d, t0)
	if c := getCondition(s, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionFalse || c.Reason != MinimumReplicasUnavailable ||
		c.Message != "Deployment does not have minimum availability." {
		t.Errorf("Available = %+v", c)
	}
	if s.UnavailableReplicas != 3 {
		t.Errorf("unavailable = %d, want 3", s.UnavailableReplicas)
	}

	// Scaling down: more available than wanted is not negative unavailability.
	big := newRS("big", 2, t0)
	big.Status.AvailableReplicas = 5
	if s := calculateStatus([]*appsv1.ReplicaSet{big}, big, d, t0); s.UnavailableReplicas != 0 {
		t.Errorf("unavailable = %d, want 0", s.UnavailableReplicas)
	}
}

func TestTerminatingReplicas(t *testing.T) {
	unsynced := newRS("a", 1, t0)
	silent := newRS("b", 1, t0)
	silent.Status.ObservedGeneration = 1
	reporting := newRS("c", 1, t0)
	reporting.Status.ObservedGeneration, reporting.Status.TerminatingReplicas = 1, ptr.To[int32](2)
	if got := terminatingReplicas([]*appsv1.ReplicaSet{unsynced, reporting, nil}); got == nil || *got != 2 {
		t.Errorf("got %v, want 2", got)
	}
	if got := terminatingReplicas([]*appsv1.ReplicaSet{reporting, silent}); got != nil {
		t.Errorf("a synced ReplicaSet without the count: got %d, want nil", *got)
	}
}

// progressing is a Progressing condition of reason last updated at.
func progressing(status corev1.ConditionStatus, reason string, at time.Time) appsv1.DeploymentCondition {
	return newCondition(appsv1.DeploymentProgressing, status, reason, "", at)
}

func TestRolloutStatusProgressing(t *testing.T) {
	earlier := t0.Add(-5 * time.Minute)
	tests := []struct {
		name       string
		deployment func(d *appsv1.Deployment)
		rss        func() (all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet)
		now        time.Time
		want       *appsv1.DeploymentCondition // Progressing; nil: none
	}{
		{
			name: "complete",
			deployment: func(d *appsv1.Deployment) {
				d.Status = appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, ReplicaSetUpdatedReason, earlier)}}
			},
			rss: func() ([]*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
				n := newRS("web-new", 2, t0)
				return []*appsv1.ReplicaSet{n}, n
			},
			now:  t0,
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: NewRSAvailableReason, Message: `ReplicaSet "web-new" has successfully progressed.`, LastUpdateTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(earlier)},
		},
		{
			name: "progress refreshes the update time, not the transition",
			deployment: func(d *appsv1.Deployment) {
				d.Status = appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 2,
					Conditions: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, ReplicaSetUpdatedReason, earlier)}}
			},
			rss: func() ([]*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
				n := newRS("web-new", 2, t0)
				n.Status.AvailableReplicas = 0
				return []*appsv1.ReplicaSet{newRS("web-old", 1, earlier), n}, n
			},
			now:  t0,
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: ReplicaSetUpdatedReason, Message: `ReplicaSet "web-new" is progressing.`, LastUpdateTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(earlier)},
		},
		{
			name: "no progress within the deadline",
			deployment: func(d *appsv1.Deployment) {
				d.Status = appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1,
					Conditions: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, NewReplicaSetReason, earlier)}}
			},
			rss:  stuck,
			now:  earlier.Add(10 * time.Minute), // exactly the deadline: not past it
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: NewReplicaSetReason, LastUpdateTime: metav1.NewTime(earlier), LastTransitionTime: metav1.NewTime(earlier)},
		},
		{
			name: "deadline exceeded",
			deployment: func(d *appsv1.Deployment) {
				d.Status = appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1,
					Conditions: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, NewReplicaSetReason, earlier)}}
			},
			rss:  stuck,
			now:  earlier.Add(10*time.Minute + time.Second),
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionFalse, Reason: TimedOutReason, Message: `ReplicaSet "web-new" has timed out progressing.`, LastUpdateTime: metav1.NewTime(earlier.Add(10*time.Minute + time.Second)), LastTransitionTime: metav1.NewTime(earlier.Add(10*time.Minute + time.Second))},
		},
		{
			name: "no deadline: no condition",
			deployment: func(d *appsv1.Deployment) {
				noDeadline(d)
				d.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, NewReplicaSetReason, earlier)}
			},
			rss: stuck,
			now: t0,
		},
		{
			name: "a finished rollout's resync estimates nothing",
			deployment: func(d *appsv1.Deployment) {
				d.Spec.Replicas = ptr.To[int32](5) // scaled up meanwhile
				d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2,
					Conditions: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, NewRSAvailableReason, earlier)}}
			},
			rss: func() ([]*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
				n := newRS("web-new", 2, t0)
				return []*appsv1.ReplicaSet{n}, n
			},
			now:  t0.Add(time.Hour),
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: NewRSAvailableReason, LastUpdateTime: metav1.NewTime(earlier), LastTransitionTime: metav1.NewTime(earlier)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("web", 2, ints(1), ints(0))
			tt.deployment(d)
			all, n := tt.rss()
			got := getCondition(rolloutStatus(all, n, d, tt.now), appsv1.DeploymentProgressing)
			if tt.want == nil {
				if got != nil {
					t.Fatalf("Progressing = %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no Progressing condition")
			}
			if got.Status != tt.want.Status || got.Reason != tt.want.Reason || (tt.want.Message != "" && got.Message != tt.want.Message) ||
				!got.LastUpdateTime.Equal(&tt.want.LastUpdateTime) || !got.LastTransitionTime.Equal(&tt.want.LastTransitionTime) {
				t.Errorf("Progressing = %+v\nwant %+v", *got, *tt.want)
			}
		})
	}
}

// stuck is a rollout whose new ReplicaSet has one pod of two available, unchanged.
func stuck() ([]*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
	n := newRS("web-new", 2, t0)
	n.Status.ReadyReplicas, n.Status.AvailableReplicas = 0, 0
	old := newRS("web-old", 1, t0.Add(-time.Hour))
	return []*appsv1.ReplicaSet{old, n}, n
}

func TestRolloutStatusReplicaFailure(t *testing.T) {
	d := newDeployment("web", 2, ints(1), ints(0))
	failure := appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: `pods "web-new-x" is forbidden: exceeded quota`, LastTransitionTime: metav1.NewTime(t0)}
	all, n := stuck()
	all[0].Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "Old"}}
	n.Status.Conditions = []appsv1.ReplicaSetCondition{failure}
	c := getCondition(rolloutStatus(all, n, d, t0), appsv1.DeploymentReplicaFailure)
	if c == nil || c.Reason != "FailedCreate" || c.Message != failure.Message || c.Status != corev1.ConditionTrue || !c.LastUpdateTime.Equal(&failure.LastTransitionTime) {
		t.Errorf("ReplicaFailure = %+v, want the new ReplicaSet's", c)
	}
	n.Status.Conditions = nil
	if c := getCondition(rolloutStatus(all, n, d, t0), appsv1.DeploymentReplicaFailure); c == nil || c.Reason != "Old" {
		t.Errorf("ReplicaFailure = %+v, want the old ReplicaSet's", c)
	}
	all[0].Status.Conditions = nil
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue}}
	if c := getCondition(rolloutStatus(all, n, d, t0), appsv1.DeploymentReplicaFailure); c != nil {
		t.Errorf("ReplicaFailure = %+v, want it removed", c)
	}
}

func TestPausedCondition(t *testing.T) {
	d := newDeployment("web", 1, nil, nil)
	d.Spec.Paused = true
	if !pausedCondition(d, t0) {
		t.Fatal("pausing: want a change")
	}
	c := getCondition(d.Status, appsv1.DeploymentProgressing)
	if c.Status != corev1.ConditionUnknown || c.Reason != PausedDeployReason || c.Message != "Deployment is paused" {
		t.Errorf("paused: %+v", c)
	}
	if pausedCondition(d, t0) {
		t.Error("paused again: want no change")
	}
	d.Spec.Paused = false
	if !pausedCondition(d, t0.Add(time.Hour)) {
		t.Fatal("resuming: want a change")
	}
	c = getCondition(d.Status, appsv1.DeploymentProgressing)
	if c.Reason != ResumedDeployReason || c.Message != "Deployment is resumed" || !c.LastUpdateTime.Equal(ptr.To(metav1.NewTime(t0.Add(time.Hour)))) {
		t.Errorf("resumed: %+v", c)
	}
	// A timed-out rollout keeps saying so.
	d.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, TimedOutReason, t0)}
	d.Spec.Paused = true
	if pausedCondition(d, t0) {
		t.Error("timed out: want no change")
	}
	// Without a deadline there is no Progressing condition to keep.
	e := noDeadline(newDeployment("web", 1, nil, nil))
	e.Spec.Paused = true
	if pausedCondition(e, t0) {
		t.Error("no deadline: want no change")
	}
}

func TestProgressCheckAfter(t *testing.T) {
	d := newDeployment("web", 2, ints(1), ints(0))
	d.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, ReplicaSetUpdatedReason, t0)}
	incomplete := appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1}
	if after, ok := progressCheckAfter(d, incomplete, t0.Add(3*time.Minute)); !ok || after != 7*time.Minute {
		t.Errorf("got %v %v, want 7m", after, ok)
	}
	complete := appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	if _, ok := progressCheckAfter(d, complete, t0); ok {
		t.Error("complete: no check due")
	}
	d.Status.Conditions = []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, TimedOutReason, t0)}
	if _, ok := progressCheckAfter(d, incomplete, t0); ok {
		t.Error("timed out: no check due")
	}
}

func TestSetCondition(t *testing.T) {
	var s appsv1.DeploymentStatus
	setCondition(&s, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "A", "", t0))
	setCondition(&s, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "A", "other", t0.Add(time.Minute)))
	if c := getCondition(s, appsv1.DeploymentAvailable); c.Message != "" || !c.LastUpdateTime.Time.Equal(t0) {
		t.Errorf("same status and reason: want no change, got %+v", c)
	}
	setCondition(&s, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "B", "", t0.Add(time.Minute)))
	if c := getCondition(s, appsv1.DeploymentAvailable); c.Reason != "B" || !c.LastTransitionTime.Time.Equal(t0) || !c.LastUpdateTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("same status: transition time kept, got %+v", c)
	}
	setCondition(&s, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "C", "", t0.Add(2*time.Minute)))
	if c := getCondition(s, appsv1.DeploymentAvailable); !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) || len(s.Conditions) != 1 {
		t.Errorf("new status: new transition time, got %+v", s.Conditions)
	}
}
