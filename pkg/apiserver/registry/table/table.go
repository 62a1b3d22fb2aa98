// Package table turns stored objects into the server-side tables that
// `kubectl get` prints. It is the last step of a read, after the object has
// been fetched from the store (decode → default → validate → admit → store →
// read back as a Table when the client asks for
// `application/json;as=Table;v=v1;g=meta.k8s.io`).
//
// Each registry package describes its columns and one row per object; this
// package handles single objects and lists, list metadata, NoHeaders and the
// AGE format, so those details are identical for every resource.
package table

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
)

// RowFunc returns the row for one object: its Cells, in the order of the
// convertor's columns, and any row Conditions. The convertor fills in
// row.Object. now is the convertor's clock, for AGE-like cells.
type RowFunc[T runtime.Object] func(obj T, now time.Time) metav1.TableRow

// Convertor is a rest.TableConvertor for objects of type T and lists of them.
type Convertor[T runtime.Object] struct {
	columns []metav1.TableColumnDefinition
	row     RowFunc[T]
	clock   clock.PassiveClock
}

var _ rest.TableConvertor = &Convertor[runtime.Object]{}

// New returns a convertor with the given columns and row function. A nil clk
// means the real clock; tests pass a fake one so that AGE cells are exact.
func New[T runtime.Object](clk clock.PassiveClock, columns []metav1.TableColumnDefinition, row RowFunc[T]) *Convertor[T] {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Convertor[T]{columns: columns, row: row, clock: clk}
}

// Columns returns a copy of the convertor's column definitions.
func (c *Convertor[T]) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition(nil), c.columns...)
}

// ConvertToTable implements rest.TableConvertor. obj is either a T or a list
// whose items are T. The apiserver itself applies includeObject to the rows
// afterwards, so every row carries the full object.
func (c *Convertor[T]) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	noHeaders, err := noHeaders(tableOptions)
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	tbl := &metav1.Table{}

	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, fmt.Errorf("table: reading the items of %T: %w", obj, err)
		}
		tbl.Rows = make([]metav1.TableRow, 0, len(items))
		for _, item := range items {
			row, err := c.rowFor(item, now)
			if err != nil {
				return nil, err
			}
			tbl.Rows = append(tbl.Rows, row)
		}
	} else {
		row, err := c.rowFor(obj, now)
		if err != nil {
			return nil, err
		}
		tbl.Rows = []metav1.TableRow{row}
	}

	// Clients resume lists and watches from the table's list metadata, so it
	// must be the list's (or, for one object, the object's version).
	if m, err := meta.ListAccessor(obj); err == nil {
		tbl.ResourceVersion = m.GetResourceVersion()
		tbl.Continue = m.GetContinue()
		tbl.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		tbl.ResourceVersion = m.GetResourceVersion()
	}

	if !noHeaders {
		tbl.ColumnDefinitions = c.Columns()
	}
	return tbl, nil
}

func (c *Convertor[T]) rowFor(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
	typed, ok := obj.(T)
	if !ok {
		return metav1.TableRow{}, fmt.Errorf("table: cannot print %T, this table shows %v", obj, reflect.TypeFor[T]())
	}
	row := c.row(typed, now)
	row.Object = runtime.RawExtension{Object: obj}
	return row, nil
}

// noHeaders reads TableOptions.NoHeaders; kubectl sets it on all but the
// first event of a watch so headers are sent once.
func noHeaders(tableOptions runtime.Object) (bool, error) {
	switch opts := tableOptions.(type) {
	case nil:
		return false, nil
	case *metav1.TableOptions:
		return opts != nil && opts.NoHeaders, nil
	default:
		return false, fmt.Errorf("table: unrecognized type %T for table options, can't display tabular output", tableOptions)
	}
}

// Since formats the time elapsed from t to now the way kubectl shows AGE
// ("5m", "3h12m", "2d"), and "<unknown>" for a zero time.
func Since(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// Age is the AGE cell of an object.
func Age(m metav1.Object, now time.Time) string {
	return Since(m.GetCreationTimestamp().Time, now)
}

// OrNone returns s, or "<none>" when it is empty, as kubectl prints absent
// optional values.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// OrUnknown returns s, or "<unknown>" when it is empty, as kubectl prints
// values a component has not reported yet.
func OrUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// NameColumn is the first column of every table; Format "name" tells kubectl
// which column holds the object's name.
func NameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name of the object, unique within its namespace."}
}

// AgeColumn is the AGE column: time since creationTimestamp.
func AgeColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "Time since the object was created."}
}

// object is what the default convertor needs: any API object with metadata.
type object interface {
	runtime.Object
	metav1.Object
}

// NewDefaultTableConvertor returns a NAME, AGE convertor for any object with
// metadata, for resources without a table of their own.
func NewDefaultTableConvertor() rest.TableConvertor {
	return newDefault(clock.RealClock{})
}

func newDefault(clk clock.PassiveClock) *Convertor[object] {
	return New(clk, []metav1.TableColumnDefinition{NameColumn(), AgeColumn()},
		func(obj object, now time.Time) metav1.TableRow {
			return metav1.TableRow{Cells: []any{obj.GetName(), Age(obj, now)}}
		})
}
