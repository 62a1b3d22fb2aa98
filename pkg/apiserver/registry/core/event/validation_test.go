package event

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	coreV1    = corev1.SchemeGroupVersion
	eventsV1  = eventsv1.SchemeGroupVersion
	eventsB1  = eventsv1beta1.SchemeGroupVersion
	eventTime = metav1.NewMicroTime(time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC))
)

func fieldErrorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s", string(e.Type), e.Field))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	slices.Sort(want)
	if got := fieldErrorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %v\nwant %v\nfull: %v", got, want, errs)
	}
}

// oldStyle is an event as a core/v1 client (e.g. an old kubelet) writes it.
func oldStyleEvent(mutate ...func(*corev1.Event)) *corev1.Event {
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "default", ResourceVersion: "1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:         "Started",
		Message:        "Started container web",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(eventTime.Time),
		LastTimestamp:  metav1.NewTime(eventTime.Time),
		Count:          1,
		Type:           corev1.EventTypeNormal,
	}
	for _, m := range mutate {
		m(e)
	}
	return e
}

// newStyle is an event as an events.k8s.io/v1 client writes it.
func newStyleEvent(mutate ...func(*corev1.Event)) *corev1.Event {
	e := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web.1", Namespace: "default", ResourceVersion: "1"},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:              "Started",
		Message:             "Started container web",
		Type:                corev1.EventTypeNormal,
		EventTime:           eventTime,
		Action:              "Start",
		ReportingController: "berth.dev/node-agent",
		ReportingInstance:   "node-agent-node-1",
	}
	for _, m := range mutate {
		m(e)
	}
	return e
}

func TestValidateEventCreate(t *testing.T) {
	tests := []struct {
		name    string
		event   *corev1.Event
		version []schema.GroupVersion // request versions the case applies to
		want    []string
	}{
		// Legacy rules, in every version.
		{name: "old style in core/v1", event: oldStyleEvent(), version: []schema.GroupVersion{coreV1, eventsB1}},
		{name: "old style, namespace mismatch", event: oldStyleEvent(func(e *corev1.Event) { e.InvolvedObject.Namespace = "other" }),
			version: []schema.GroupVersion{coreV1}, want: []string{"FieldValueInvalid involvedObject.namespace"}},
		{name: "old style, cluster-scoped object in default", event: oldStyleEvent(func(e *corev1.Event) {
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}), version: []schema.GroupVersion{coreV1}},
		{name: "old style, cluster-scoped object in no namespace", event: oldStyleEvent(func(e *corev1.Event) {
			e.Namespace = ""
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}), version: []schema.GroupVersion{coreV1}},
		{name: "old style, cluster-scoped object in kube-system", event: oldStyleEvent(func(e *corev1.Event) {
			e.Namespace = "kube-system"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}), version: []schema.GroupVersion{coreV1}, want: []string{"FieldValueInvalid involvedObject.namespace"}},
		{name: "old style, any name is fine in core/v1", event: oldStyleEvent(func(e *corev1.Event) { e.Name = "Web:1" }), version: []schema.GroupVersion{coreV1}},
		{name: "old style, odd type is fine in core/v1", event: oldStyleEvent(func(e *corev1.Event) { e.Type = "Info" }), version: []schema.GroupVersion{coreV1}},

		{name: "new style in core/v1", event: newStyleEvent(), version: []schema.GroupVersion{coreV1}},
		{name: "new style, cluster-scoped object in kube-system", event: newStyleEvent(func(e *corev1.Event) {
			e.Namespace = "kube-system"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}), version: []schema.GroupVersion{coreV1, eventsV1}},
		{name: "new style, cluster-scoped object elsewhere", event: newStyleEvent(func(e *corev1.Event) {
			e.Namespace = "team-a"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}), version: []schema.GroupVersion{coreV1, eventsV1}, want: []string{"FieldValueInvalid involvedObject.namespace"}},
		{name: "new style missing reporting fields in core/v1", event: newStyleEvent(func(e *corev1.Event) {
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
		}), version: []schema.GroupVersion{coreV1}, want: []string{
			"FieldValueRequired reportingComponent", "FieldValueInvalid reportingComponent", "FieldValueInvalid reportingComponent",
			"FieldValueRequired reportingInstance", "FieldValueRequired action", "FieldValueRequired reason",
		}},
		{name: "bad reporting controller in events.k8s.io/v1", event: newStyleEvent(func(e *corev1.Event) { e.ReportingController = "not valid" }),
			version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid reportingController"}},
		{name: "too long fields", event: newStyleEvent(func(e *corev1.Event) {
			e.ReportingInstance = strings.Repeat("i", 129)
			e.Action = strings.Repeat("a", 129)
			e.Reason = strings.Repeat("r", 129)
			e.Message = strings.Repeat("m", 1025)
		}), version: []schema.GroupVersion{coreV1, eventsV1}, want: []string{
			"FieldValueInvalid reportingInstance", "FieldValueInvalid action", "FieldValueInvalid reason", "FieldValueInvalid message",
		}},
		{name: "fields at their limits", event: newStyleEvent(func(e *corev1.Event) {
			e.ReportingInstance = strings.Repeat("i", 128)
			e.Action = strings.Repeat("a", 128)
			e.Reason = strings.Repeat("r", 128)
			e.Message = strings.Repeat("m", 1024)
		}), version: []schema.GroupVersion{coreV1, eventsV1}},

		// Strict rules, events.k8s.io/v1 only.
		{name: "new style in events.k8s.io/v1", event: newStyleEvent(), version: []schema.GroupVersion{eventsV1}},
		{name: "with series", event: newStyleEvent(func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 2, LastObservedTime: eventTime} }),
			version: []schema.GroupVersion{eventsV1}},
		{name: "bad series", event: newStyleEvent(func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 1} }),
			version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid series.count", "FieldValueRequired series.lastObservedTime"}},
		{name: "bad series is fine in core/v1", event: newStyleEvent(func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 1} }),
			version: []schema.GroupVersion{coreV1}},
		{name: "name must be a DNS subdomain", event: newStyleEvent(func(e *corev1.Event) { e.Name = "Web:1" }),
			version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid metadata.name"}},
		{name: "namespace required", event: newStyleEvent(func(e *corev1.Event) {
			e.Namespace = ""
			e.InvolvedObject.Namespace = ""
		}), version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid involvedObject.namespace", "FieldValueRequired metadata.namespace"}},
		{name: "old style in events.k8s.io/v1", event: oldStyleEvent(), version: []schema.GroupVersion{eventsV1}, want: []string{
			"FieldValueRequired eventTime", "FieldValueInvalid firstTimestamp", "FieldValueInvalid lastTimestamp",
			"FieldValueInvalid count", "FieldValueInvalid source",
		}},
		{name: "type must be Normal or Warning", event: newStyleEvent(func(e *corev1.Event) { e.Type = "Info" }),
			version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid type"}},
		{name: "type required", event: newStyleEvent(func(e *corev1.Event) { e.Type = "" }),
			version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid type"}},
		{name: "source host alone must be unset", event: newStyleEvent(func(e *corev1.Event) { e.Source.Host = "node-1" }),
			version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid source"}},
	}
	for _, tc := range tests {
		for _, v := range tc.version {
			t.Run(fmt.Sprintf("%s/%v", tc.name, v), func(t *testing.T) {
				assertFieldErrors(t, ValidateEventCreate(tc.event, v), tc.want)
			})
		}
	}
}

func TestValidateEventUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *corev1.Event
		version  []schema.GroupVersion
		want     []string
	}{
		{name: "legacy: anything may change", old: oldStyleEvent(), new: oldStyleEvent(func(e *corev1.Event) {
			e.Count = 5
			e.Message = "again"
			e.LastTimestamp = metav1.NewTime(eventTime.Add(time.Minute))
		}), version: []schema.GroupVersion{coreV1, eventsB1}},
		{name: "legacy rules still apply", old: oldStyleEvent(), new: oldStyleEvent(func(e *corev1.Event) { e.InvolvedObject.Namespace = "x" }),
			version: []schema.GroupVersion{coreV1}, want: []string{"FieldValueInvalid involvedObject.namespace"}},

		{name: "series update", old: newStyleEvent(), new: newStyleEvent(func(e *corev1.Event) {
			e.Series = &corev1.EventSeries{Count: 2, LastObservedTime: eventTime}
			e.Labels = map[string]string{"a": "b"}
		}), version: []schema.GroupVersion{eventsV1}},
		{name: "bad series update", old: newStyleEvent(), new: newStyleEvent(func(e *corev1.Event) {
			e.Series = &corev1.EventSeries{Count: 1, LastObservedTime: eventTime}
		}), version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid series.count"}},
		{name: "unchanged bad series is not revalidated", old: newStyleEvent(func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 1} }),
			new: newStyleEvent(func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 1} }), version: []schema.GroupVersion{eventsV1}},
		{name: "eventTime within a microsecond", old: newStyleEvent(), new: newStyleEvent(func(e *corev1.Event) {
			e.EventTime = metav1.NewMicroTime(eventTime.Add(999 * time.Nanosecond))
		}), version: []schema.GroupVersion{eventsV1}},
		{name: "eventTime moved", old: newStyleEvent(), new: newStyleEvent(func(e *corev1.Event) {
			e.EventTime = metav1.NewMicroTime(eventTime.Add(time.Microsecond))
		}), version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid eventTime"}},
		{name: "immutable fields", old: newStyleEvent(), new: newStyleEvent(func(e *corev1.Event) {
			e.InvolvedObject.Name = "other"
			e.Reason = "Stopped"
			e.Message = "other"
			e.Type = corev1.EventTypeWarning
			e.Action = "Stop"
			e.Related = &corev1.ObjectReference{Kind: "Node", Name: "node-1"}
			e.ReportingController = "example.com/other"
			e.ReportingInstance = "other"
		}), version: []schema.GroupVersion{eventsV1}, want: []string{
			"FieldValueInvalid involvedObject", "FieldValueInvalid reason", "FieldValueInvalid message", "FieldValueInvalid type",
			"FieldValueInvalid action", "FieldValueInvalid related", "FieldValueInvalid reportingController",
			"FieldValueInvalid reportingInstance",
		}},
		{name: "deprecated fields are immutable too", old: newStyleEvent(), new: newStyleEvent(func(e *corev1.Event) {
			e.Count = 2
			e.Source.Component = "x"
			e.FirstTimestamp = metav1.NewTime(eventTime.Time)
			e.LastTimestamp = metav1.NewTime(eventTime.Time)
		}), version: []schema.GroupVersion{eventsV1}, want: []string{
			"FieldValueInvalid count", "FieldValueInvalid source", "FieldValueInvalid firstTimestamp", "FieldValueInvalid lastTimestamp",
		}},
		{name: "metadata update rules", old: newStyleEvent(), new: newStyleEvent(func(e *corev1.Event) { e.ResourceVersion = "" }),
			version: []schema.GroupVersion{eventsV1}, want: []string{"FieldValueInvalid metadata.resourceVersion"}},
	}
	for _, tc := range tests {
		for _, v := range tc.version {
			t.Run(fmt.Sprintf("%s/%v", tc.name, v), func(t *testing.T) {
				assertFieldErrors(t, ValidateEventUpdate(tc.new, tc.old, v), tc.want)
			})
		}
	}
}
