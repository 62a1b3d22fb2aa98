package controllerrevision

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func revision(data string) *appsv1.ControllerRevision {
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-5d8f", Namespace: "ns", ResourceVersion: "1"},
		Revision:   1,
	}
	if data != "" {
		r.Data = runtime.RawExtension{Raw: []byte(data)}
	}
	return r
}

func expectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d is %q, want it to contain %q", i, errs[i].Error(), w)
		}
	}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		r    *appsv1.ControllerRevision
		want []string
	}{
		{"object", revision(`{"spec":{"template":{}}}`), nil},
		{"no data", revision(""), []string{"data: Required value: data is mandatory"}},
		{"null", revision("null"), []string{"data: Required value: data is mandatory"}},
		{"array", revision("[1]"), []string{"data: Required value: data must be a valid JSON object"}},
		{"not JSON", revision("{nope"), []string{`data: Invalid value: "<value omitted>": error parsing data: invalid character`}},
		{"negative revision", func() *appsv1.ControllerRevision { r := revision(`{}`); r.Revision = -1; return r }(),
			[]string{"revision: Invalid value: -1: must be greater than or equal to 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrors(t, Strategy.Validate(context.Background(), tt.r), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := revision(`{"a":1}`)
	renumbered := old.DeepCopy()
	renumbered.Revision = 4
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), renumbered, old))
	changed := revision(`{"a":2}`)
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), changed, old), `data: Invalid value: {"a":2}: field is immutable`)
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	owned := revision(`{}`)
	owned.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Minute))
	owned.Revision = 3
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "u", Controller: ptr.To(true)}}
	orphan := revision(`{}`)
	orphan.Name = "lost"
	orphan.CreationTimestamp = owned.CreationTimestamp
	list := &appsv1.ControllerRevisionList{Items: []appsv1.ControllerRevision{*owned, *orphan}}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{"agent-5d8f", "daemonset.apps/agent", int64(3), "5m"}, {"lost", "<none>", int64(1), "5m"}}
	for r, row := range tbl.Rows {
		for i, cell := range row.Cells {
			if cell != want[r][i] {
				t.Errorf("row %d cell %d is %#v, want %#v", r, i, cell, want[r][i])
			}
		}
	}
}
