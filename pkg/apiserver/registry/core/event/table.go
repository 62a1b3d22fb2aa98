package event

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get events`. It serves
// events.k8s.io/v1 too, since both APIs store a core/v1 Event.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.Event] {
	return table.New(clk, []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: "Time since the event was last observed."},
		{Name: "Type", Type: "string", Description: "Type of the event (Normal, Warning)."},
		{Name: "Reason", Type: "string", Description: "Short, machine-readable reason for the event."},
		{Name: "Object", Type: "string", Description: "Object the event is about, as kind/name."},
		{Name: "Subobject", Type: "string", Priority: 1, Description: "Part of the object the event is about, e.g. a container."},
		{Name: "Source", Type: "string", Priority: 1, Description: "Component (and host) that reported the event."},
		{Name: "Message", Type: "string", Description: "Human-readable description of the event."},
		{Name: "First Seen", Type: "string", Priority: 1, Description: "Time since the event was first observed."},
		{Name: "Count", Type: "string", Priority: 1, Description: "Number of times the event was observed."},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: "Name of the Event object."},
	}, eventRow)
}

// eventRow reads times and counts from whichever API wrote the event:
// core/v1 sets firstTimestamp, lastTimestamp and count; events.k8s.io/v1
// sets eventTime and, for repeats, series.
func eventRow(ev *corev1.Event, now time.Time) metav1.TableRow {
	firstSeen := table.Since(ev.FirstTimestamp.Time, now)
	if ev.FirstTimestamp.IsZero() {
		firstSeen = table.Since(ev.EventTime.Time, now)
	}
	lastSeen := firstSeen
	if !ev.LastTimestamp.IsZero() {
		lastSeen = table.Since(ev.LastTimestamp.Time, now)
	}
	count := ev.Count
	switch {
	case ev.Series != nil:
		lastSeen = table.Since(ev.Series.LastObservedTime.Time, now)
		count = ev.Series.Count
	case count == 0:
		count = 1 // events.k8s.io leaves count unset on events seen once
	}

	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}

	return metav1.TableRow{Cells: []any{
		lastSeen,
		ev.Type,
		ev.Reason,
		object,
		ev.InvolvedObject.FieldPath,
		eventSource(ev),
		strings.TrimSpace(ev.Message),
		firstSeen,
		int64(count),
		ev.Name,
	}}
}

// eventSource is "component, host", falling back to the events.k8s.io
// reportingController and reportingInstance, and leaving out an empty host.
func eventSource(ev *corev1.Event) string {
	component := ev.Source.Component
	if component == "" {
		component = ev.ReportingController
	}
	host := ev.Source.Host
	if host == "" {
		host = ev.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}
