package disruption

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestExpectedCounts tables upstream's arithmetic: percentages of the controllers' summed
// scale, rounded up; each controller counted once; desired healthy never below zero.
func TestExpectedCounts(t *testing.T) {
	owner := func(uid string) *metav1.ObjectMeta { return &metav1.ObjectMeta{Name: uid, UID: types.UID(uid)} }
	scales := map[types.UID]int32{"a": 3, "b": 7}
	find := func(ref *metav1.OwnerReference, _ string) (types.UID, int32, bool, error) {
		s, ok := scales[ref.UID]
		return ref.UID, s, ok, nil
	}
	managed := []*corev1.Pod{pod("a1", true, owner("a"), rsKind), pod("a2", true, owner("a"), rsKind), pod("b1", true, owner("b"), rsKind)}
	tests := []struct {
		name                     string
		mutate                   func(*policyv1.PodDisruptionBudget)
		pods                     []*corev1.Pod
		wantExpected, wantDesire int32
		wantUnmanaged            int
		wantErr                  bool
	}{
		{name: "integer minAvailable counts pods", mutate: minAvailable(intstr.FromInt32(2)), pods: managed, wantExpected: 3, wantDesire: 2},
		{name: "percent minAvailable of the scales, rounded up", mutate: minAvailable(intstr.FromString("25%")), pods: managed, wantExpected: 10, wantDesire: 3},
		{name: "integer maxUnavailable", mutate: maxUnavailable(intstr.FromInt32(4)), pods: managed, wantExpected: 10, wantDesire: 6},
		{name: "percent maxUnavailable rounded up", mutate: maxUnavailable(intstr.FromString("15%")), pods: managed, wantExpected: 10, wantDesire: 8},
		{name: "maxUnavailable above the scale", mutate: maxUnavailable(intstr.FromInt32(20)), pods: managed, wantExpected: 10, wantDesire: 0},
		{name: "unmanaged pods are named", mutate: maxUnavailable(intstr.FromInt32(1)),
			pods: append([]*corev1.Pod{pod("lone", true, nil, rsKind)}, managed...), wantExpected: 10, wantDesire: 9, wantUnmanaged: 1},
		{name: "a controller not found", mutate: maxUnavailable(intstr.FromInt32(1)), pods: []*corev1.Pod{pod("c1", true, owner("c"), rsKind)}, wantErr: true},
		{name: "an invalid percentage", mutate: minAvailable(intstr.FromString("half")), pods: managed, wantErr: true},
		{name: "neither set", mutate: func(*policyv1.PodDisruptionBudget) {}, pods: managed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := expectedCounts(budget(tc.mutate), tc.pods, find)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if c.expected != tc.wantExpected || c.desiredHealthy != tc.wantDesire || len(c.unmanaged) != tc.wantUnmanaged {
				t.Errorf("expected %d, desired %d, unmanaged %v; want %d, %d, %d", c.expected, c.desiredHealthy, c.unmanaged,
					tc.wantExpected, tc.wantDesire, tc.wantUnmanaged)
			}
		})
	}

	boom := errors.New("lister broke")
	if _, err := expectedCounts(budget(maxUnavailable(intstr.FromInt32(1))), managed,
		func(*metav1.OwnerReference, string) (types.UID, int32, bool, error) { return "", 0, false, boom }); !errors.Is(err, boom) {
		t.Errorf("err %v, want the finder's", err)
	}
}
