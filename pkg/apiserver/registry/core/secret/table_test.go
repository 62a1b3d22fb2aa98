package secret

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

func TestSecretTable(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(tableNow.Add(-5 * time.Second))}
	}
	tests := []struct {
		name   string
		secret corev1.Secret
		want   []any
	}{
		{"opaque", corev1.Secret{ObjectMeta: meta("a"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}},
			[]any{"a", "Opaque", int64(1), "5s"}},
		{"tls", corev1.Secret{ObjectMeta: meta("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
			[]any{"tls", "kubernetes.io/tls", int64(2), "5s"}},
		{"empty", corev1.Secret{ObjectMeta: meta("empty")}, []any{"empty", "", int64(0), "5s"}},
	}
	list := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.secret)
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
				t.Errorf("row.Object is not the secret")
			}
		})
	}
}

func TestSecretTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tbl, err := c.ConvertToTable(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Type", "Data", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != s {
		t.Errorf("single secret: want one row holding it")
	}
	tbl, err = c.ConvertToTable(context.Background(), s, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
