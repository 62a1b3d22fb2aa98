package event

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// Length limits for events written the new way (with eventTime set).
const (
	ReportingInstanceLengthLimit = 128
	ActionLengthLimit            = 128
	ReasonLengthLimit            = 128
	NoteLengthLimit              = 1024
)

// isLegacyVersion reports whether requests in this version get only the lenient rules
// that old clients (kubelets, controllers using core/v1) rely on.
func isLegacyVersion(gv schema.GroupVersion) bool {
	return gv == corev1.SchemeGroupVersion || gv == eventsv1beta1.SchemeGroupVersion
}

// ValidateEventCreate validates a new event. Every event must pass the legacy rules;
// events created through events.k8s.io/v1 must also be new-style events: eventTime,
// type Normal or Warning, and none of the deprecated core/v1 fields.
func ValidateEventCreate(e *corev1.Event, requestVersion schema.GroupVersion) field.ErrorList {
	errs := validateLegacy(e, requestVersion)
	if isLegacyVersion(requestVersion) {
		return errs
	}

	metaPath := field.NewPath("metadata")
	errs = append(errs, apivalidation.ValidateObjectMeta(&e.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)...)
	errs = append(errs, namespace.ValidateMetadataFinalizers(e.Finalizers, metaPath.Child("finalizers"))...)
	errs = append(errs, validateSeries(e.Series)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	// The deprecated fields are written through core/v1 only; events.k8s.io/v1 shows them
	// read-only as deprecated*.
	const unset = "needs to be unset"
	if !e.FirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", unset))
	}
	if !e.LastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", unset))
	}
	if e.Count != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", unset))
	}
	if e.Source.Component != "" || e.Source.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", unset))
	}
	return errs
}

// ValidateEventUpdate validates an update. Through events.k8s.io/v1 an event is
// immutable except for its metadata and series, which is how a recorder reports that the
// same thing happened again.
func ValidateEventUpdate(newE, oldE *corev1.Event, requestVersion schema.GroupVersion) field.ErrorList {
	errs := validateLegacy(newE, requestVersion)
	if isLegacyVersion(requestVersion) {
		return errs
	}

	metaPath := field.NewPath("metadata")
	errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&newE.ObjectMeta, &oldE.ObjectMeta, metaPath)...)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newE.Finalizers, metaPath.Child("finalizers"))...)
	if !reflect.DeepEqual(newE.Series, oldE.Series) {
		errs = append(errs, validateSeries(newE.Series)...)
	}

	immutable := func(newVal, oldVal any, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(newVal, oldVal, field.NewPath(name))...)
	}
	immutable(newE.InvolvedObject, oldE.InvolvedObject, "involvedObject")
	immutable(newE.Reason, oldE.Reason, "reason")
	immutable(newE.Message, oldE.Message, "message")
	immutable(newE.Source, oldE.Source, "source")
	immutable(newE.FirstTimestamp, oldE.FirstTimestamp, "firstTimestamp")
	immutable(newE.LastTimestamp, oldE.LastTimestamp, "lastTimestamp")
	immutable(newE.Count, oldE.Count, "count")
	immutable(newE.Type, oldE.Type, "type")
	// Sub-microsecond differences are tolerated: clients that correctly truncate to the
	// wire format's microseconds must be able to send back what they read.
	if !newE.EventTime.Truncate(time.Microsecond).Equal(oldE.EventTime.Truncate(time.Microsecond)) {
		immutable(newE.EventTime, oldE.EventTime, "eventTime")
	}
	immutable(newE.Action, oldE.Action, "action")
	immutable(newE.Related, oldE.Related, "related")
	immutable(newE.ReportingController, oldE.ReportingController, "reportingController")
	immutable(newE.ReportingInstance, oldE.ReportingInstance, "reportingInstance")
	return errs
}

func validateSeries(series *corev1.EventSeries) field.ErrorList {
	if series == nil {
		return nil
	}
	var errs field.ErrorList
	seriesPath := field.NewPath("series")
	if series.Count < 2 {
		errs = append(errs, field.Invalid(seriesPath.Child("count"), "", "should be at least 2"))
	}
	if series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(seriesPath.Child("lastObservedTime"), ""))
	}
	return errs
}

// validateLegacy holds the rules every event must pass in every version. An event without
// eventTime is old-style: only its namespace must agree with the object it is about.
// With eventTime, the reporting fields are required and lengths bounded.
func validateLegacy(e *corev1.Event, requestVersion schema.GroupVersion) field.ErrorList {
	var errs field.ErrorList
	involvedNSPath := field.NewPath("involvedObject", "namespace")
	const nsMismatch = "does not match event.namespace"

	if e.EventTime.IsZero() {
		switch {
		case e.InvolvedObject.Namespace != "":
			if e.Namespace != e.InvolvedObject.Namespace {
				errs = append(errs, field.Invalid(involvedNSPath, e.InvolvedObject.Namespace, nsMismatch))
			}
		// Events about cluster-scoped objects may live in "default" for old clients.
		case e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault:
			errs = append(errs, field.Invalid(involvedNSPath, e.InvolvedObject.Namespace, nsMismatch))
		}
		return errs
	}

	if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(involvedNSPath, e.InvolvedObject.Namespace, nsMismatch))
	}
	// core/v1 calls the reporting controller reportingComponent.
	controllerPath := field.NewPath("reportingController")
	if requestVersion == corev1.SchemeGroupVersion {
		controllerPath = field.NewPath("reportingComponent")
	}
	if e.ReportingController == "" {
		errs = append(errs, field.Required(controllerPath, ""))
	}
	for _, msg := range validation.IsQualifiedName(e.ReportingController) {
		errs = append(errs, field.Invalid(controllerPath, e.ReportingController, msg))
	}
	errs = append(errs, requiredWithLimit(e.ReportingInstance, "reportingInstance", ReportingInstanceLengthLimit)...)
	errs = append(errs, requiredWithLimit(e.Action, "action", ActionLengthLimit)...)
	errs = append(errs, requiredWithLimit(e.Reason, "reason", ReasonLengthLimit)...)
	if len(e.Message) > NoteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", NoteLengthLimit)))
	}
	return errs
}

func requiredWithLimit(value, name string, limit int) field.ErrorList {
	fldPath := field.NewPath(name)
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if len(value) > limit {
		return field.ErrorList{field.Invalid(fldPath, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}
