package priorityclass

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestPriorityClassTable(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(tableNow.Add(-400 * 24 * time.Hour))}
	}
	lower := corev1.PreemptLowerPriority
	never := corev1.PreemptNever
	tests := []struct {
		name string
		pc   schedulingv1.PriorityClass
		want []any
	}{
		{"system critical",
			schedulingv1.PriorityClass{ObjectMeta: meta("system-node-critical"), Value: 2000001000, PreemptionPolicy: &lower},
			[]any{"system-node-critical", int64(2000001000), false, "400d", "PreemptLowerPriority"}},
		{"global default, never preempts",
			schedulingv1.PriorityClass{ObjectMeta: meta("batch"), Value: -5, GlobalDefault: true, PreemptionPolicy: &never},
			[]any{"batch", int64(-5), true, "400d", "Never"}},
		{"no policy", schedulingv1.PriorityClass{ObjectMeta: meta("plain")}, []any{"plain", int64(0), false, "400d", ""}},
	}
	list := &schedulingv1.PriorityClassList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.pc)
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
				t.Errorf("cells = %v, want %v", got, tt.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the priority class")
			}
		})
	}
}

func TestPriorityClassTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tbl, err := c.ConvertToTable(context.Background(), pc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, types []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
		types = append(types, col.Type)
	}
	if want := []string{"Name", "Value", "Global-Default", "Age", "PreemptionPolicy"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if want := []string{"string", "integer", "boolean", "string", "string"}; !reflect.DeepEqual(types, want) {
		t.Errorf("column types = %v, want %v", types, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != pc {
		t.Errorf("single priority class: want one row holding it")
	}
	tbl, err = c.ConvertToTable(context.Background(), pc, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
