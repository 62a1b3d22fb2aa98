package replicaset

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestCalculateStatus(t *testing.T) {
	rs := newRS("web", 3)
	rs.Spec.MinReadySeconds = 30
	rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
	full := func(p *corev1.Pod) *corev1.Pod { p.Labels = rs.Spec.Template.Labels; return p }
	pods := []*corev1.Pod{
		full(readyPod(ownedPod(rs, rsGVK, "available"), testNow.Add(-time.Minute))),
		full(readyPod(ownedPod(rs, rsGVK, "ready"), testNow.Add(-time.Second))),
		ownedPod(rs, rsGVK, "partly-labeled"),
	}
	terminating := []*corev1.Pod{ownedPod(rs, rsGVK, "going")}

	status := calculateStatus(rs, pods, terminating, nil, true, testNow)
	want := appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, TerminatingReplicas: ptr.To[int32](1)}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if status := calculateStatus(rs, pods, terminating, nil, false, testNow); status.TerminatingReplicas != nil {
		t.Errorf("terminatingReplicas %d for a kind without it", *status.TerminatingReplicas)
	}

	// A failed manage while too few sets ReplicaFailure FailedCreate...
	status = calculateStatus(newRS("web", 5), pods, nil, errors.New("quota"), true, testNow)
	wantCond := []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(testNow), Reason: "FailedCreate", Message: "quota"}}
	if diff := cmp.Diff(wantCond, status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	// ...while too many FailedDelete...
	if status := calculateStatus(newRS("web", 1), pods, nil, errors.New("x"), true, testNow); status.Conditions[0].Reason != "FailedDelete" {
		t.Errorf("reason %q, want FailedDelete", status.Conditions[0].Reason)
	}
	// ...an existing one is kept as it is (its transition time too)...
	failing := newRS("web", 5)
	failing.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "old"}}
	if status := calculateStatus(failing, pods, nil, errors.New("new"), true, testNow); status.Conditions[0].Message != "old" {
		t.Errorf("condition %+v, want the existing one", status.Conditions[0])
	}
	// ...and a manage that succeeded clears it.
	if status := calculateStatus(failing, pods, nil, nil, true, testNow); len(status.Conditions) != 0 {
		t.Errorf("conditions %+v, want none", status.Conditions)
	}
	if len(failing.Status.Conditions) != 1 {
		t.Error("calculateStatus changed its ReplicaSet")
	}
}

func TestStatusUnchanged(t *testing.T) {
	rs := newRS("web", 1)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)}
	same := *rs.Status.DeepCopy()
	if !statusUnchanged(rs, same) {
		t.Error("an equal status counts as changed")
	}
	rs.Generation = 2
	if statusUnchanged(rs, same) {
		t.Error("a new generation is not written")
	}
	rs.Generation = 1
	same.TerminatingReplicas = ptr.To[int32](1)
	if statusUnchanged(rs, same) {
		t.Error("a terminatingReplicas change is not written")
	}
}

// TestPodsToDeleteRanksByRelatedPods: of two otherwise equal pods, the one whose node holds
// more pods of the Deployment's ReplicaSets goes first.
func TestPodsToDeleteRanksByRelatedPods(t *testing.T) {
	pod := func(name, node string) *corev1.Pod {
		p := readyPod(ownedPod(newRS("web", 1), rsGVK, name), testNow.Add(-time.Hour))
		p.Spec.NodeName = node
		p.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
		return p
	}
	a, b, c := pod("a", "node-1"), pod("b", "node-2"), pod("c", "node-3")
	active := []*corev1.Pod{a, b, c}
	// node-2 holds two more pods of a sibling ReplicaSet, node-3 one; a dead one on node-1 does
	// not count.
	dead := pod("dead", "node-1")
	dead.Status.Phase = corev1.PodFailed
	dead2 := pod("dead2", "node-1")
	dead2.Status.Phase = corev1.PodFailed
	related := []*corev1.Pod{a, b, c, pod("s1", "node-2"), pod("s2", "node-2"), pod("s3", "node-3"), dead, dead2}

	got := podsToDelete(active, related, 2, testNow)
	if diff := cmp.Diff([]string{"b", "c"}, names(got)); diff != "" {
		t.Errorf("picked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names(active)); diff != "" {
		t.Errorf("podsToDelete reordered its input (-want +got):\n%s", diff)
	}
	if got := podsToDelete(active, related, 3, testNow); len(got) != 3 {
		t.Errorf("deleting all picked %d", len(got))
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestRCConversionRoundTrips(t *testing.T) {
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rc-uid", Generation: 4, ResourceVersion: "9"},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To[int32](2), MinReadySeconds: 5, Selector: labelsWeb,
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsWeb}},
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 3,
			Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "m"}},
		},
	}
	if diff := cmp.Diff(rc, rsToRC(rcToRS(rc))); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	rs := rcToRS(rc)
	rs.Labels = map[string]string{"changed": "yes"}
	if rc.Labels != nil {
		t.Error("the conversion shares maps with the cached RC")
	}
	noReplicas := rc.DeepCopy()
	noReplicas.Spec.Replicas = nil
	if got := *rcToRS(noReplicas).Spec.Replicas; got != 1 {
		t.Errorf("unset replicas convert to %d, want the default 1", got)
	}
}
