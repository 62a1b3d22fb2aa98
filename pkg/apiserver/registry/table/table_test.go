package table

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func TestSince(t *testing.T) {
	tests := []struct {
		name string
		t    time.Time
		want string
	}{
		{"zero", time.Time{}, "<unknown>"},
		{"seconds", now.Add(-42 * time.Second), "42s"},
		{"minutes and seconds", now.Add(-(5*time.Minute + 3*time.Second)), "5m3s"},
		{"minutes", now.Add(-30 * time.Minute), "30m"},
		{"hours and minutes", now.Add(-(3*time.Hour + 12*time.Minute)), "3h12m"},
		{"days", now.Add(-50 * time.Hour), "2d2h"},
		{"slightly in the future", now.Add(500 * time.Millisecond), "0s"},
		{"far in the future", now.Add(time.Hour), "<invalid>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Since(tt.t, now); got != tt.want {
				t.Errorf("Since() = %q, want %q", got, tt.want)
			}
		})
	}
}

func testConvertor() *Convertor[*corev1.ConfigMap] {
	cols := []metav1.TableColumnDefinition{NameColumn(), {Name: "Data", Type: "string"}, AgeColumn()}
	return New(clocktesting.NewFakePassiveClock(now), cols, func(cm *corev1.ConfigMap, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{cm.Name, int64(len(cm.Data)), Age(cm, now)}}
	})
}

func TestConvertToTable(t *testing.T) {
	cm := func(name string, age time.Duration, keys int) corev1.ConfigMap {
		c := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(age), ResourceVersion: "7"}, Data: map[string]string{}}
		for i := range keys {
			c.Data[strings.Repeat("k", i+1)] = "v"
		}
		return c
	}
	remaining := int64(3)
	list := &corev1.ConfigMapList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "token", RemainingItemCount: &remaining},
		Items:    []corev1.ConfigMap{cm("a", time.Minute, 0), cm("b", 3*time.Hour, 2)},
	}
	single := cm("c", 10*time.Second, 1)

	tests := []struct {
		name      string
		obj       runtime.Object
		opts      runtime.Object
		wantCells [][]any
		wantRV    string
		wantCont  string
		wantRem   *int64
		headers   bool
	}{
		{
			name:      "list",
			obj:       list,
			wantCells: [][]any{{"a", int64(0), "60s"}, {"b", int64(2), "3h"}},
			wantRV:    "42", wantCont: "token", wantRem: &remaining, headers: true,
		},
		{
			name:      "list without headers",
			obj:       list,
			opts:      &metav1.TableOptions{NoHeaders: true},
			wantCells: [][]any{{"a", int64(0), "60s"}, {"b", int64(2), "3h"}},
			wantRV:    "42", wantCont: "token", wantRem: &remaining,
		},
		{
			name:      "single object",
			obj:       &single,
			opts:      &metav1.TableOptions{},
			wantCells: [][]any{{"c", int64(1), "10s"}},
			wantRV:    "7", headers: true,
		},
		{
			name:      "typed nil options",
			obj:       &single,
			opts:      (*metav1.TableOptions)(nil),
			wantCells: [][]any{{"c", int64(1), "10s"}},
			wantRV:    "7", headers: true,
		},
		{
			name:    "empty list",
			obj:     &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}},
			wantRV:  "9",
			headers: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl, err := testConvertor().ConvertToTable(context.Background(), tt.obj, tt.opts)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			if got := len(tbl.ColumnDefinitions) > 0; got != tt.headers {
				t.Errorf("column definitions present = %v, want %v", got, tt.headers)
			}
			if tbl.ResourceVersion != tt.wantRV || tbl.Continue != tt.wantCont {
				t.Errorf("list meta = %q/%q, want %q/%q", tbl.ResourceVersion, tbl.Continue, tt.wantRV, tt.wantCont)
			}
			if (tbl.RemainingItemCount == nil) != (tt.wantRem == nil) ||
				(tbl.RemainingItemCount != nil && *tbl.RemainingItemCount != *tt.wantRem) {
				t.Errorf("remainingItemCount = %v, want %v", tbl.RemainingItemCount, tt.wantRem)
			}
			if tbl.Rows == nil {
				t.Errorf("rows must be an empty list, not null, so clients see []")
			}
			if len(tbl.Rows) != len(tt.wantCells) {
				t.Fatalf("got %d rows, want %d", len(tbl.Rows), len(tt.wantCells))
			}
			for i, row := range tbl.Rows {
				if len(row.Cells) != len(tt.wantCells[i]) {
					t.Fatalf("row %d: cells %v, want %v", i, row.Cells, tt.wantCells[i])
				}
				for j := range row.Cells {
					if row.Cells[j] != tt.wantCells[i][j] {
						t.Errorf("row %d cell %d = %#v, want %#v", i, j, row.Cells[j], tt.wantCells[i][j])
					}
				}
				got, ok := row.Object.Object.(*corev1.ConfigMap)
				if !ok || got.Name != row.Cells[0] {
					t.Errorf("row %d: Object = %#v, want the ConfigMap %v", i, row.Object.Object, row.Cells[0])
				}
			}
		})
	}
}

func TestConvertToTableRowObjectIsListItem(t *testing.T) {
	list := &corev1.ConfigMapList{Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}}
	tbl, err := testConvertor().ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Rows[0].Object.Object != &list.Items[0] {
		t.Errorf("row.Object should point at the list item itself")
	}
}

func TestConvertToTableErrors(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		opts runtime.Object
		want string
	}{
		{"wrong object type", &corev1.Secret{}, nil, "cannot print *v1.Secret"},
		{"wrong list item type", &corev1.SecretList{Items: []corev1.Secret{{}}}, nil, "cannot print *v1.Secret"},
		{"wrong options type", &corev1.ConfigMap{}, &metav1.ListOptions{}, "unrecognized type *v1.ListOptions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testConvertor().ConvertToTable(context.Background(), tt.obj, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestColumnsAreCopied(t *testing.T) {
	c := testConvertor()
	tbl, err := c.ConvertToTable(context.Background(), &corev1.ConfigMap{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl.ColumnDefinitions[0].Name = "changed"
	if c.Columns()[0].Name != "Name" {
		t.Errorf("changing a table's columns changed the convertor's")
	}
}

func TestDefaultConvertor(t *testing.T) {
	c := newDefault(clocktesting.NewFakePassiveClock(now))
	u := &unstructured.Unstructured{}
	u.SetName("u")
	u.SetCreationTimestamp(ago(5 * time.Hour))
	list := &corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: ago(90 * time.Second)}}, {ObjectMeta: metav1.ObjectMeta{Name: "q"}}}}

	tests := []struct {
		name string
		obj  runtime.Object
		want [][]any
	}{
		{"typed list", list, [][]any{{"p", "90s"}, {"q", "<unknown>"}}},
		{"unstructured", u, [][]any{{"u", "5h"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl, err := c.ConvertToTable(context.Background(), tt.obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := []string{tbl.ColumnDefinitions[0].Name, tbl.ColumnDefinitions[1].Name}; got[0] != "Name" || got[1] != "Age" {
				t.Errorf("columns = %v, want [Name Age]", got)
			}
			if len(tbl.Rows) != len(tt.want) {
				t.Fatalf("got %d rows, want %d", len(tbl.Rows), len(tt.want))
			}
			for i, row := range tbl.Rows {
				if row.Cells[0] != tt.want[i][0] || row.Cells[1] != tt.want[i][1] {
					t.Errorf("row %d = %v, want %v", i, row.Cells, tt.want[i])
				}
				if row.Object.Object == nil {
					t.Errorf("row %d: Object not set", i)
				}
			}
		})
	}

	if _, err := c.ConvertToTable(context.Background(), &metav1.Status{}, nil); err == nil {
		t.Errorf("an object without metadata should not convert")
	}
}

func TestOrNoneOrUnknown(t *testing.T) {
	tests := []struct {
		in, none, unknown string
	}{
		{"", "<none>", "<unknown>"},
		{"x", "x", "x"},
	}
	for _, tt := range tests {
		if got := OrNone(tt.in); got != tt.none {
			t.Errorf("OrNone(%q) = %q, want %q", tt.in, got, tt.none)
		}
		if got := OrUnknown(tt.in); got != tt.unknown {
			t.Errorf("OrUnknown(%q) = %q, want %q", tt.in, got, tt.unknown)
		}
	}
}
