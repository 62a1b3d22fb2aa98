// Package recovery is what every controller of pkg/controllers does at the boundary of one
// key's reconcile: `berth up` runs the controllers in the process of the API server and etcd,
// so a panic while reconciling one object must cost that object a retry, not the process.
// Sync recovers the panic (counted in berth_recovered_panics_total{component="controller/<name>"}
// and logged with its stack by pkg/util/panics) and hands it back as an error, which the
// controller requeues with its rate-limited back-off like any other failure; RecordPanic
// tells the object's owner with a Warning event. Worker runs a controller's whole work-queue
// loop around them.
package recovery

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// FailedSync is the reason of the Warning event on an object whose reconcile panicked: the
// kubelet's reason for a sync that failed.
const FailedSync = "FailedSync"

// Component is the berth_recovered_panics_total label of a controller.
func Component(controller string) string { return "controller/" + controller }

// Sync runs one key's reconcile for controller; a panic comes back as a *panics.Error.
func Sync(ctx context.Context, controller string, sync func() error) error {
	return panics.Call(ctx, Component(controller), sync)
}

// IsPanic reports whether err is a recovered panic.
func IsPanic(err error) bool {
	var pe *panics.Error
	return errors.As(err, &pe)
}

// RecordPanic emits a Warning FailedSync event on regarding when err is a recovered panic,
// and reports whether it was one. A nil recorder records nothing (unit tests).
func RecordPanic(recorder events.EventRecorder, regarding runtime.Object, err error) bool {
	if !IsPanic(err) {
		return false
	}
	if recorder != nil {
		recorder.Eventf(regarding, nil, corev1.EventTypeWarning, FailedSync, "Sync", "%v; retrying with back-off", err)
	}
	return true
}

// Reference is the object reference an event on a cluster-scoped object of kind names.
func Reference(kind, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: kind, Name: name}
}
