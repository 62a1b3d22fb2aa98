package event

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// eventsInternal is the internal version of events.k8s.io, whose type berth makes
// *corev1.Event.
var eventsInternal = schema.GroupVersion{Group: eventsv1.GroupName, Version: runtime.APIVersionInternal}

// newScheme registers the types as berth's API server does: core/v1 Events, events.k8s.io/v1
// Events, and *corev1.Event as the internal type of events.k8s.io.
func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	s.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.Event{}, &corev1.EventList{})
	s.AddKnownTypes(eventsv1.SchemeGroupVersion, &eventsv1.Event{}, &eventsv1.EventList{})
	s.AddKnownTypes(eventsInternal, &corev1.Event{}, &corev1.EventList{})
	if err := RegisterConversions(s); err != nil {
		t.Fatalf("RegisterConversions: %v", err)
	}
	if err := s.AddFieldLabelConversionFunc(eventsv1.SchemeGroupVersion.WithKind("Event"), EventsFieldLabelConversion); err != nil {
		t.Fatal(err)
	}
	if err := s.AddFieldLabelConversionFunc(corev1.SchemeGroupVersion.WithKind("Event"), CoreFieldLabelConversion); err != nil {
		t.Fatal(err)
	}
	return s
}

func fullEventsV1() *eventsv1.Event {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web.1", Namespace: "default", UID: "uid-1", ResourceVersion: "7",
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
		},
		EventTime:                metav1.NewMicroTime(t0.Add(123456 * time.Microsecond)),
		Series:                   &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Minute))},
		ReportingController:      "berth.dev/node-agent",
		ReportingInstance:        "node-agent-node-1",
		Action:                   "Start",
		Reason:                   "Started",
		Regarding:                corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "pod-uid", APIVersion: "v1", ResourceVersion: "5", FieldPath: "spec.containers{web}"},
		Related:                  &corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		Note:                     "Started container web",
		Type:                     corev1.EventTypeNormal,
		DeprecatedSource:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		DeprecatedFirstTimestamp: metav1.NewTime(t0),
		DeprecatedLastTimestamp:  metav1.NewTime(t0.Add(time.Hour)),
		DeprecatedCount:          4,
	}
}

func TestConvertFieldMapping(t *testing.T) {
	s := newScheme(t)
	in := fullEventsV1()
	var out corev1.Event
	if err := s.Convert(in, &out, nil); err != nil {
		t.Fatalf("Convert: %v", err)
	}
	want := corev1.Event{
		ObjectMeta:          in.ObjectMeta,
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Series:              &corev1.EventSeries{Count: 3, LastObservedTime: in.Series.LastObservedTime},
		Action:              in.Action,
		Related:             in.Related,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if !apiequality.Semantic.DeepEqual(out, want) {
		t.Errorf("events.k8s.io/v1 → core:\n got %+v\nwant %+v", out, want)
	}
}

func TestRoundTrip(t *testing.T) {
	s := newScheme(t)
	tests := []struct {
		name string
		in   *eventsv1.Event
	}{
		{name: "full", in: fullEventsV1()},
		{name: "empty", in: &eventsv1.Event{}},
		{name: "no series or related", in: func() *eventsv1.Event {
			e := fullEventsV1()
			e.Series, e.Related = nil, nil
			return e
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// events.k8s.io/v1 → core → events.k8s.io/v1
			var core corev1.Event
			if err := s.Convert(tc.in, &core, nil); err != nil {
				t.Fatal(err)
			}
			var back eventsv1.Event
			if err := s.Convert(&core, &back, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(&back, tc.in) {
				t.Errorf("events round trip:\n got %+v\nwant %+v", back, *tc.in)
			}
			// core → events.k8s.io/v1 → core
			var again corev1.Event
			if err := s.Convert(&back, &again, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(again, core) {
				t.Errorf("core round trip:\n got %+v\nwant %+v", again, core)
			}
		})
	}
}

func TestConvertToVersion(t *testing.T) {
	s := newScheme(t)
	// Decoding an events.k8s.io/v1 request converts to the internal version.
	obj, err := s.ConvertToVersion(fullEventsV1(), eventsInternal)
	if err != nil {
		t.Fatalf("ConvertToVersion internal: %v", err)
	}
	core, ok := obj.(*corev1.Event)
	if !ok {
		t.Fatalf("got %T, want *corev1.Event", obj)
	}
	if core.Message != "Started container web" || core.InvolvedObject.Name != "web" || core.Count != 4 {
		t.Errorf("unexpected core event: %+v", core)
	}

	// Encoding a response converts the stored object to the request's version.
	obj, err = s.ConvertToVersion(core, eventsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatalf("ConvertToVersion events.k8s.io/v1: %v", err)
	}
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		t.Fatalf("got %T, want *eventsv1.Event", obj)
	}
	if ev.APIVersion != "events.k8s.io/v1" || ev.Kind != "Event" || ev.Note != "Started container web" || ev.Regarding.Name != "web" || ev.DeprecatedCount != 4 {
		t.Errorf("unexpected events.k8s.io event: %+v", ev)
	}
}

func TestConvertList(t *testing.T) {
	s := newScheme(t)
	tests := []struct {
		name string
		in   *eventsv1.EventList
	}{
		{name: "items", in: &eventsv1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "c"}, Items: []eventsv1.Event{*fullEventsV1(), {}}}},
		{name: "empty items", in: &eventsv1.EventList{Items: []eventsv1.Event{}}},
		{name: "nil items", in: &eventsv1.EventList{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var core corev1.EventList
			if err := s.Convert(tc.in, &core, nil); err != nil {
				t.Fatal(err)
			}
			if core.ResourceVersion != tc.in.ResourceVersion || len(core.Items) != len(tc.in.Items) || (core.Items == nil) != (tc.in.Items == nil) {
				t.Fatalf("list meta or items lost: %+v", core)
			}
			for i := range core.Items {
				if core.Items[i].Message != tc.in.Items[i].Note {
					t.Errorf("item %d: message %q, want %q", i, core.Items[i].Message, tc.in.Items[i].Note)
				}
			}
			var back eventsv1.EventList
			if err := s.Convert(&core, &back, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(&back, tc.in) {
				t.Errorf("list round trip:\n got %+v\nwant %+v", back, *tc.in)
			}
		})
	}
}

func TestFieldLabelConversion(t *testing.T) {
	s := newScheme(t)
	tests := []struct {
		name      string
		version   string
		label     string
		wantLabel string
		wantErr   bool
	}{
		{name: "events regarding.name", version: "events.k8s.io/v1", label: "regarding.name", wantLabel: "involvedObject.name"},
		{name: "events regarding.fieldPath", version: "events.k8s.io/v1", label: "regarding.fieldPath", wantLabel: "involvedObject.fieldPath"},
		{name: "events reportingController", version: "events.k8s.io/v1", label: "reportingController", wantLabel: "reportingComponent"},
		{name: "events type", version: "events.k8s.io/v1", label: "type", wantLabel: "type"},
		{name: "events metadata.name", version: "events.k8s.io/v1", label: "metadata.name", wantLabel: "metadata.name"},
		{name: "events: core name not accepted", version: "events.k8s.io/v1", label: "involvedObject.name", wantErr: true},
		{name: "events: no source", version: "events.k8s.io/v1", label: "source", wantErr: true},
		{name: "core involvedObject.uid", version: "v1", label: "involvedObject.uid", wantLabel: "involvedObject.uid"},
		{name: "core source", version: "v1", label: "source", wantLabel: "source"},
		{name: "core reportingComponent", version: "v1", label: "reportingComponent", wantLabel: "reportingComponent"},
		{name: "core: events name not accepted", version: "v1", label: "regarding.name", wantErr: true},
		{name: "core: message not selectable", version: "v1", label: "message", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gvk := corev1.SchemeGroupVersion.WithKind("Event")
			if tc.version != "v1" {
				gvk = eventsv1.SchemeGroupVersion.WithKind("Event")
			}
			label, value, err := s.ConvertFieldLabel(gvk, tc.label, "x")
			if tc.wantErr {
				if err == nil || err.Error() != "field label not supported: "+tc.label {
					t.Errorf("err = %v, want field label not supported", err)
				}
				return
			}
			if err != nil || label != tc.wantLabel || value != "x" {
				t.Errorf("got (%q, %q, %v), want (%q, \"x\", nil)", label, value, err, tc.wantLabel)
			}
		})
	}
}

// TestEventsLabelsMatchCoreFieldSet guards the contract with storage: every label the
// events.k8s.io conversion produces must be one core/v1 accepts.
func TestEventsLabelsMatchCoreFieldSet(t *testing.T) {
	for from, to := range eventsFieldLabels {
		if _, _, err := CoreFieldLabelConversion(to, ""); err != nil {
			t.Errorf("%s maps to %s, which core/v1 does not accept", from, to)
		}
		if _, err := fields.ParseSelector(to + "=x"); err != nil {
			t.Errorf("%s: %v", to, err)
		}
	}
}
