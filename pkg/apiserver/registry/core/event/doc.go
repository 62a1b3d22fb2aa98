// Package event is the registry of events, served both as core/v1 Events and as
// events.k8s.io/v1 Events: their validation and conversion, their strategy and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step, which depends on the API version of the request, and the conversion
// that lets both groups share one stored object, a *corev1.Event.
package event
