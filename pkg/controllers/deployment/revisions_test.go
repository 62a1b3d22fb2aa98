package deployment

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		deployment  map[string]string
		rs          map[string]string
		newRevision int64
		exists      bool
		want        map[string]string
		wantChanged bool
	}{
		{
			name:        "a ReplicaSet being created",
			deployment:  map[string]string{"kubernetes.io/change-cause": "v2", corev1.LastAppliedConfigAnnotation: "{}", RevisionAnnotation: "1"},
			rs:          map[string]string{},
			newRevision: 2,
			want: map[string]string{"kubernetes.io/change-cause": "v2", RevisionAnnotation: "2",
				DesiredReplicasAnnotation: "4", MaxReplicasAnnotation: "5"},
			wantChanged: true,
		},
		{
			name:        "up to date",
			deployment:  map[string]string{"a": "b"},
			rs:          map[string]string{"a": "b", RevisionAnnotation: "3"},
			newRevision: 3, exists: true,
			want: map[string]string{"a": "b", RevisionAnnotation: "3"},
		},
		{
			name:        "a higher revision is kept",
			rs:          map[string]string{RevisionAnnotation: "7"},
			newRevision: 3, exists: true,
			want: map[string]string{RevisionAnnotation: "7"},
		},
		{
			name:        "rolled back to: the old revision goes into the history",
			rs:          map[string]string{RevisionAnnotation: "1"},
			newRevision: 4, exists: true,
			want:        map[string]string{RevisionAnnotation: "4", RevisionHistoryAnnotation: "1"},
			wantChanged: true,
		},
		{
			name:        "rolled back to again",
			rs:          map[string]string{RevisionAnnotation: "4", RevisionHistoryAnnotation: "1"},
			newRevision: 6, exists: true,
			want:        map[string]string{RevisionAnnotation: "6", RevisionHistoryAnnotation: "1,4"},
			wantChanged: true,
		},
		{
			name:        "a revision that is not a number is left alone",
			rs:          map[string]string{RevisionAnnotation: "x"},
			newRevision: 2, exists: true,
			want: map[string]string{RevisionAnnotation: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("web", 4, ints(1), ints(1))
			d.Annotations = tt.deployment
			rs := newRS("web-abc", 0, t0)
			rs.Annotations = maps.Clone(tt.rs)
			changed := setNewReplicaSetAnnotations(d, rs, tt.newRevision, tt.exists)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if !maps.Equal(rs.Annotations, tt.want) {
				t.Errorf("annotations = %v, want %v", rs.Annotations, tt.want)
			}
		})
	}
}

func TestAppendRevisionHistory(t *testing.T) {
	if got, ok := appendRevisionHistory("", "3", 10); !ok || got != "3" {
		t.Errorf("empty: %q %v", got, ok)
	}
	if got, ok := appendRevisionHistory("1,2,3", "4", 7); !ok || got != "1,2,3,4" {
		t.Errorf("fits: %q %v", got, ok)
	}
	// "1,2,3,45" is 8 characters: the oldest entry goes, "2,3,45" fits.
	if got, ok := appendRevisionHistory("1,2,3", "45", 6); !ok || got != "2,3,45" {
		t.Errorf("over the limit: %q %v", got, ok)
	}
	if _, ok := appendRevisionHistory("1", strings.Repeat("9", 20), 10); ok {
		t.Error("a revision longer than the limit should not be appended")
	}
}

func TestRevisions(t *testing.T) {
	rss := []*appsv1.ReplicaSet{
		withRevision(newRS("a", 0, t0), "3"),
		withRevision(newRS("b", 0, t0), "10"),
		withRevision(newRS("c", 0, t0), "x"),
		newRS("d", 0, t0),
		withRevision(newRS("e", 0, t0), "7"),
	}
	if got := maxRevision(rss); got != 10 {
		t.Errorf("maxRevision = %d, want 10", got)
	}
	if got := lastRevision(rss); got != 7 {
		t.Errorf("lastRevision = %d, want 7", got)
	}
	if got := lastRevision(rss[:1]); got != 0 {
		t.Errorf("lastRevision of one = %d, want 0", got)
	}
}

func TestSetDeploymentAnnotationsFrom(t *testing.T) {
	d := newDeployment("web", 1, nil, nil)
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "v3", RevisionAnnotation: "3", corev1.LastAppliedConfigAnnotation: "{}", "gone": "x"}
	rs := newRS("web-1", 0, t0)
	rs.Annotations = map[string]string{"kubernetes.io/change-cause": "v1", RevisionAnnotation: "1", DesiredReplicasAnnotation: "1"}
	setDeploymentAnnotationsFrom(d, rs)
	want := map[string]string{"kubernetes.io/change-cause": "v1", RevisionAnnotation: "3", corev1.LastAppliedConfigAnnotation: "{}"}
	if !maps.Equal(d.Annotations, want) {
		t.Errorf("got %v, want %v", d.Annotations, want)
	}
}

func TestRollbackTo(t *testing.T) {
	d := newDeployment("web", 1, nil, nil)
	if rollbackTo(d) != nil {
		t.Error("no annotation: want nil")
	}
	d.Annotations[appsv1.DeprecatedRollbackTo] = "2"
	if got := rollbackTo(d); got == nil || *got != 2 {
		t.Errorf("got %v, want 2", got)
	}
	d.Annotations[appsv1.DeprecatedRollbackTo] = "two"
	if rollbackTo(d) != nil {
		t.Error("not a number: want nil")
	}
}
