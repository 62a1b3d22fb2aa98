package configmap

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

func TestConfigMapTable(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(tableNow.Add(-75 * time.Minute))}
	}
	tests := []struct {
		name string
		cm   corev1.ConfigMap
		want []any
	}{
		{"empty", corev1.ConfigMap{ObjectMeta: meta("empty")}, []any{"empty", int64(0), "75m"}},
		{"data", corev1.ConfigMap{ObjectMeta: meta("data"), Data: map[string]string{"a": "1", "b": "2"}}, []any{"data", int64(2), "75m"}},
		{"data and binary data",
			corev1.ConfigMap{ObjectMeta: meta("both"), Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0}, "c": {1}}},
			[]any{"both", int64(3), "75m"}},
	}
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.cm)
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
				t.Errorf("row.Object is not the config map")
			}
		})
	}
}

func TestConfigMapTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tbl, err := c.ConvertToTable(context.Background(), cm, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Data", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != cm {
		t.Errorf("single config map: want one row holding it")
	}
	tbl, err = c.ConvertToTable(context.Background(), cm, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
