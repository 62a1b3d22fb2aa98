package namespace

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestNamespaceTable(t *testing.T) {
	ns := func(name string, phase corev1.NamespacePhase, age time.Duration) corev1.Namespace {
		return corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(tableNow.Add(-age))},
			Status:     corev1.NamespaceStatus{Phase: phase},
		}
	}
	tests := []struct {
		name string
		ns   corev1.Namespace
		want []any
	}{
		{"active", ns("default", corev1.NamespaceActive, 30*24*time.Hour), []any{"default", "Active", "30d"}},
		{"terminating", ns("old", corev1.NamespaceTerminating, 4*time.Minute), []any{"old", "Terminating", "4m"}},
		{"no phase, no creation time", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, []any{"new", "", "<unknown>"}},
	}
	list := &corev1.NamespaceList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.ns)
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) || tbl.ResourceVersion != "8" {
		t.Fatalf("got %d rows at rv %q", len(tbl.Rows), tbl.ResourceVersion)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %q, want %q", got, tt.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the namespace")
			}
		})
	}
}

func TestNamespaceTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tbl, err := c.ConvertToTable(context.Background(), ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Status", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != ns {
		t.Errorf("single namespace: want one row holding it")
	}
	tbl, err = c.ConvertToTable(context.Background(), ns, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
