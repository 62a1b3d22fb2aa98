package serviceaccount

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

func TestServiceAccountTable(t *testing.T) {
	tests := []struct {
		name string
		sa   corev1.ServiceAccount
		want []any
	}{
		{"default",
			corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default", CreationTimestamp: metav1.NewTime(tableNow.Add(-9 * 24 * time.Hour))}},
			[]any{"default", "9d"}},
		{"with legacy secrets",
			corev1.ServiceAccount{
				ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "default", CreationTimestamp: metav1.NewTime(tableNow.Add(-150 * time.Second))},
				Secrets:    []corev1.ObjectReference{{Name: "builder-token"}},
			},
			[]any{"builder", "2m30s"}},
	}
	list := &corev1.ServiceAccountList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.sa)
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
				t.Errorf("row.Object is not the service account")
			}
		})
	}
}

func TestServiceAccountTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tbl, err := c.ConvertToTable(context.Background(), sa, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != sa {
		t.Errorf("single service account: want one row holding it")
	}
	tbl, err = c.ConvertToTable(context.Background(), sa, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
