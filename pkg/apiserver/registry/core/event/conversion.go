package event

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterConversions registers the conversions between events.k8s.io/v1 Events and
// the stored *corev1.Event, field for field as upstream maps them:
//
//	events.k8s.io/v1           core/v1
//	regarding                  involvedObject
//	note                       message
//	deprecatedSource           source
//	deprecatedFirstTimestamp   firstTimestamp
//	deprecatedLastTimestamp    lastTimestamp
//	deprecatedCount            count
//
// and the rest by name (reportingController is core/v1's reportingComponent on the wire).
// Like upstream's generated conversions, the output shares maps, slices and pointers with
// the input; callers that mutate the result copy first.
func RegisterConversions(s *runtime.Scheme) error {
	funcs := []struct {
		from, to any
		fn       conversion.ConversionFunc
	}{
		{(*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b any, _ conversion.Scope) error {
			toCore(a.(*eventsv1.Event), b.(*corev1.Event))
			return nil
		}},
		{(*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b any, _ conversion.Scope) error {
			fromCore(a.(*corev1.Event), b.(*eventsv1.Event))
			return nil
		}},
		{(*eventsv1.EventList)(nil), (*corev1.EventList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*eventsv1.EventList), b.(*corev1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = nil
			if in.Items != nil {
				out.Items = make([]corev1.Event, len(in.Items))
				for i := range in.Items {
					toCore(&in.Items[i], &out.Items[i])
				}
			}
			return nil
		}},
		{(*corev1.EventList)(nil), (*eventsv1.EventList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*corev1.EventList), b.(*eventsv1.EventList)
			out.ListMeta = in.ListMeta
			out.Items = nil
			if in.Items != nil {
				out.Items = make([]eventsv1.Event, len(in.Items))
				for i := range in.Items {
					fromCore(&in.Items[i], &out.Items[i])
				}
			}
			return nil
		}},
	}
	for _, f := range funcs {
		if err := s.AddConversionFunc(f.from, f.to, f.fn); err != nil {
			return fmt.Errorf("register conversion %T to %T: %w", f.from, f.to, err)
		}
	}
	return nil
}

// toCore converts an events.k8s.io/v1 Event to the stored form. TypeMeta is left to the
// scheme, which sets it for the target version.
func toCore(in *eventsv1.Event, out *corev1.Event) {
	*out = corev1.Event{
		TypeMeta:            out.TypeMeta,
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
		Action:              in.Action,
		Related:             in.Related,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

// fromCore converts the stored form to an events.k8s.io/v1 Event.
func fromCore(in *corev1.Event, out *eventsv1.Event) {
	*out = eventsv1.Event{
		TypeMeta:                 out.TypeMeta,
		ObjectMeta:               in.ObjectMeta,
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  in.Related,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

// eventsFieldLabels maps events.k8s.io/v1 field-selector labels to the core/v1 names that
// the stored object's field set uses.
var eventsFieldLabels = map[string]string{
	"metadata.name":             "metadata.name",
	"metadata.namespace":        "metadata.namespace",
	"regarding.kind":            "involvedObject.kind",
	"regarding.namespace":       "involvedObject.namespace",
	"regarding.name":            "involvedObject.name",
	"regarding.uid":             "involvedObject.uid",
	"regarding.apiVersion":      "involvedObject.apiVersion",
	"regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath":       "involvedObject.fieldPath",
	"reason":                    "reason",
	"reportingController":       "reportingComponent",
	"type":                      "type",
}

// coreFieldLabels are the field-selector labels core/v1 Events support.
var coreFieldLabels = map[string]bool{
	"metadata.name":                  true,
	"metadata.namespace":             true,
	"involvedObject.kind":            true,
	"involvedObject.namespace":       true,
	"involvedObject.name":            true,
	"involvedObject.uid":             true,
	"involvedObject.apiVersion":      true,
	"involvedObject.resourceVersion": true,
	"involvedObject.fieldPath":       true,
	"reason":                         true,
	"reportingComponent":             true,
	"source":                         true,
	"type":                           true,
}

// EventsFieldLabelConversion is the field-label conversion for events.k8s.io/v1 Events,
// for runtime.Scheme.AddFieldLabelConversionFunc.
func EventsFieldLabelConversion(label, value string) (string, string, error) {
	mapped, ok := eventsFieldLabels[label]
	if !ok {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return mapped, value, nil
}

// CoreFieldLabelConversion is the field-label conversion for core/v1 Events, for
// runtime.Scheme.AddFieldLabelConversionFunc.
func CoreFieldLabelConversion(label, value string) (string, string, error) {
	if !coreFieldLabels[label] {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return label, value, nil
}
