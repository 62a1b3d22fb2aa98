package event

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

func tableAgo(d time.Duration) metav1.Time { return metav1.NewTime(tableNow.Add(-d)) }

func tableMicroAgo(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(tableNow.Add(-d)) }

func tablePodRef(name, fieldPath string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, FieldPath: fieldPath}
}

func TestEventTable(t *testing.T) {
	tests := []struct {
		name string
		ev   corev1.Event
		// LAST SEEN, TYPE, REASON, OBJECT, SUBOBJECT, SOURCE, MESSAGE, FIRST SEEN, COUNT, NAME
		want []any
	}{
		{"core/v1 event seen once",
			corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "web.1"}, InvolvedObject: tablePodRef("web", ""),
				Type: "Normal", Reason: "Scheduled", Message: "Successfully assigned default/web to node-1",
				Source: corev1.EventSource{Component: "default-scheduler"}, FirstTimestamp: tableAgo(90 * time.Second),
				LastTimestamp: tableAgo(90 * time.Second), Count: 1,
			},
			[]any{"90s", "Normal", "Scheduled", "pod/web", "", "default-scheduler", "Successfully assigned default/web to node-1", "90s", int64(1), "web.1"}},
		{"core/v1 event seen repeatedly",
			corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "web.2"}, InvolvedObject: tablePodRef("web", "spec.containers{app}"),
				Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container\n",
				Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: tableAgo(3 * time.Hour),
				LastTimestamp: tableAgo(5 * time.Minute), Count: 42,
			},
			[]any{"5m", "Warning", "BackOff", "pod/web", "spec.containers{app}", "kubelet, node-1", "Back-off restarting failed container", "3h", int64(42), "web.2"}},
		{"no last timestamp falls back to the first",
			corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "n.1"}, InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
				Type: "Normal", Reason: "Starting", FirstTimestamp: tableAgo(2 * time.Minute), Count: 1,
			},
			[]any{"2m", "Normal", "Starting", "node/node-1", "", "", "", "2m", int64(1), "n.1"}},
		{"events.k8s.io event seen once",
			corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e.1"}, InvolvedObject: tablePodRef("web", ""),
				Type: "Normal", Reason: "Pulled", Message: "Container image pulled",
				EventTime: tableMicroAgo(7 * time.Minute), ReportingController: "berth.io/node", ReportingInstance: "node-1",
			},
			[]any{"7m", "Normal", "Pulled", "pod/web", "", "berth.io/node, node-1", "Container image pulled", "7m", int64(1), "e.1"}},
		{"events.k8s.io series",
			corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e.2"}, InvolvedObject: tablePodRef("web", ""),
				Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed",
				EventTime:           tableMicroAgo(20 * time.Minute),
				Series:              &corev1.EventSeries{Count: 6, LastObservedTime: tableMicroAgo(30 * time.Second)},
				ReportingController: "berth.io/node",
			},
			[]any{"30s", "Warning", "Unhealthy", "pod/web", "", "berth.io/node", "Readiness probe failed", "20m", int64(6), "e.2"}},
		{"source wins over reporting fields",
			corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e.3"}, InvolvedObject: tablePodRef("web", ""),
				Source:              corev1.EventSource{Component: "kubelet"},
				ReportingController: "other", ReportingInstance: "node-2",
				FirstTimestamp: tableAgo(time.Minute), LastTimestamp: tableAgo(time.Minute), Count: 1,
			},
			[]any{"60s", "", "", "pod/web", "", "kubelet, node-2", "", "60s", int64(1), "e.3"}},
		{"object without name, no times",
			corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e.4"}, InvolvedObject: corev1.ObjectReference{Kind: "ClusterThing"}},
			[]any{"<unknown>", "", "", "clusterthing", "", "", "", "<unknown>", int64(1), "e.4"}},
	}

	list := &corev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "77", Continue: "next"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.ev)
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) || tbl.ResourceVersion != "77" || tbl.Continue != "next" {
		t.Fatalf("got %d rows, rv %q, continue %q", len(tbl.Rows), tbl.ResourceVersion, tbl.Continue)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %q\n          want %q", got, tt.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the event")
			}
		})
	}
}

func TestEventTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", ResourceVersion: "3"}}
	tbl, err := c.ConvertToTable(context.Background(), ev, &metav1.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names, wide []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
		if col.Priority == 1 {
			wide = append(wide, col.Name)
		}
	}
	if want := []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if want := []string{"Subobject", "Source", "First Seen", "Count", "Name"}; !reflect.DeepEqual(wide, want) {
		t.Errorf("wide columns = %v, want %v", wide, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != ev || tbl.ResourceVersion != "3" {
		t.Errorf("single event: rows %d, rv %q", len(tbl.Rows), tbl.ResourceVersion)
	}

	tbl, err = c.ConvertToTable(context.Background(), ev, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
