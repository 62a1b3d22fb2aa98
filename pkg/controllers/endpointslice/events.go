package endpointslice

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// eventAction is the action of this controller's events (events.k8s.io requires one).
const eventAction = "Sync"

// event records a Warning with reason on svc; a nil Recorder records nothing (unit tests).
func (c *Controller) event(svc *corev1.Service, reason, format string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, reason, eventAction, format, args...)
	}
}

// reconcilerEvents lets the upstream reconciler, which records core/v1 events (its
// TopologyAwareHintsEnabled/Disabled and the like), record them through the controller's
// events.k8s.io Recorder, read when each event happens since manager.go sets it after
// NewController.
type reconcilerEvents struct{ c *Controller }

var _ record.EventRecorder = reconcilerEvents{}

func (r reconcilerEvents) Event(obj runtime.Object, eventtype, reason, message string) {
	r.Eventf(obj, eventtype, reason, "%s", message)
}

func (r reconcilerEvents) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	if r.c.Recorder != nil {
		r.c.Recorder.Eventf(obj, nil, eventtype, reason, eventAction, format, args...)
	}
}

// AnnotatedEventf drops the annotations, which events.k8s.io events do not carry.
func (r reconcilerEvents) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, format string, args ...any) {
	r.Eventf(obj, eventtype, reason, format, args...)
}
