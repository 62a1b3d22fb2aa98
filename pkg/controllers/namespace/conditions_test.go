package namespace

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestConditionsFor(t *testing.T) {
	type want struct {
		status  corev1.ConditionStatus
		reason  string
		message string
	}
	ok := func(t corev1.NamespaceConditionType) want {
		return want{corev1.ConditionFalse, healthy[t].reason, healthy[t].message}
	}
	tests := []struct {
		name    string
		report  deletionReport
		want    map[corev1.NamespaceConditionType]want // types not listed must be healthy
		wantErr bool                                   // report.err() is not nil
	}{{
		name: "all done",
	}, {
		name: "resources and finalizers remaining, sorted",
		report: deletionReport{
			remaining: map[schema.GroupVersionResource]int{
				podsResource: 2,
				leases:       1,
				configMaps:   0,
			},
			finalizers: map[string]int{"z.example.com/b": 1, "a.example.com/a": 3},
		},
		want: map[corev1.NamespaceConditionType]want{
			corev1.NamespaceContentRemaining: {corev1.ConditionTrue, "SomeResourcesRemain",
				"Some resources are remaining: leases.coordination.k8s.io has 1 resource instances, pods. has 2 resource instances"},
			corev1.NamespaceFinalizersRemaining: {corev1.ConditionTrue, "SomeFinalizersRemain",
				"Some content in the namespace has finalizers remaining: a.example.com/a in 3 resource instances, z.example.com/b in 1 resource instances"},
		},
	}, {
		name: "failures",
		report: deletionReport{
			discoveryErr:    errors.New("connection refused"),
			groupVersionErr: errors.New("unexpected GroupVersion string: a/b/c"),
			contentErrs:     []error{errors.New("second"), errors.New("first")},
		},
		want: map[corev1.NamespaceConditionType]want{
			corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionTrue, "DiscoveryFailed", "connection refused"},
			corev1.NamespaceDeletionGVParsingFailure: {corev1.ConditionTrue, "GroupVersionParsingFailed", "unexpected GroupVersion string: a/b/c"},
			corev1.NamespaceDeletionContentFailure: {corev1.ConditionTrue, "ContentDeletionFailed",
				"Failed to delete all resource types, 2 remaining: first, second"},
		},
		wantErr: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conditionsFor(tt.report)
			if len(got) != len(conditionOrder) {
				t.Fatalf("got %d conditions, want %d", len(got), len(conditionOrder))
			}
			for i, c := range got {
				if c.Type != conditionOrder[i] {
					t.Errorf("condition %d is %s, want %s", i, c.Type, conditionOrder[i])
				}
				w, listed := tt.want[c.Type]
				if !listed {
					w = ok(c.Type)
				}
				if c.Status != w.status || c.Reason != w.reason || c.Message != w.message {
					t.Errorf("%s = %s/%s/%q, want %s/%s/%q", c.Type, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
			if err := tt.report.err(); (err != nil) != tt.wantErr {
				t.Errorf("err() = %v", err)
			}
		})
	}
}

func TestMergeConditions(t *testing.T) {
	earlier := metav1.NewTime(now.Add(-time.Hour))
	later := metav1.NewTime(now)
	remaining := deletionReport{remaining: map[schema.GroupVersionResource]int{podsResource: 1}}

	status := corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
		{Type: "SomethingElse", Status: corev1.ConditionTrue, LastTransitionTime: earlier},
	}}
	if !mergeConditions(&status, conditionsFor(remaining), earlier) {
		t.Fatal("first merge reported no change")
	}
	if len(status.Conditions) != 1+len(conditionOrder) {
		t.Fatalf("got %d conditions, want the foreign one kept plus %d", len(status.Conditions), len(conditionOrder))
	}
	if mergeConditions(&status, conditionsFor(remaining), later) {
		t.Error("merging the same conditions again reported a change")
	}

	// One more pod: same status, new message, so the transition time stays.
	remaining.remaining[podsResource] = 2
	if !mergeConditions(&status, conditionsFor(remaining), later) {
		t.Fatal("a new message reported no change")
	}
	c := status.Conditions[conditionIndex(status.Conditions, corev1.NamespaceContentRemaining)]
	if c.LastTransitionTime != earlier || c.Message != "Some resources are remaining: pods. has 2 resource instances" {
		t.Errorf("after a message change: %+v", c)
	}

	// The pods are gone: the status flips and the transition time moves.
	mergeConditions(&status, conditionsFor(deletionReport{}), later)
	c = status.Conditions[conditionIndex(status.Conditions, corev1.NamespaceContentRemaining)]
	if c.Status != corev1.ConditionFalse || c.Reason != "ContentRemoved" || c.LastTransitionTime != later {
		t.Errorf("after the content went: %+v", c)
	}
}
