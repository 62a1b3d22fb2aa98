package registry

import (
	"context"
	"strings"

	grpccodes "google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
)

// clientErrorStorage is the storage under every store. It answers two kinds of requests whose
// errors k8s.io/apiserver passes on as 500 Internal Server Error although the request is at
// fault, with the status the request deserves:
//
//   - a patch that does not fit the object (server-side apply of a string where a map
//     belongs, a strategic merge patch that puts a number into a list of objects): 400 Bad
//     Request with the same text. kubernetes/kubernetes#139253 and #79210 report these; the
//     fix proposed upstream (#139255) answers 400 as well. Patches are applied inside the
//     update function a store hands to GuaranteedUpdate, so this is where their errors pass.
//   - an object too large for etcd (a 1 MiB name fits the 3 MiB body limit, but twice over
//     with the key does not fit etcd's request limit): 413 Request Entity Too Large. The
//     error keeps the etcd error's identity, so that the create and update handlers still
//     see it as too large and retry once without managedFields, as they do for etcd's.
type clientErrorStorage struct{ storage.Interface }

func (s clientErrorStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return asTooLarge(s.Interface.Create(ctx, key, obj, out, ttl))
}

func (s clientErrorStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return asTooLarge(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions,
		func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
			out, ttl, err := tryUpdate(input, res)
			if err != nil && isPatch(ctx) {
				err = asBadPatch(err)
			}
			return out, ttl, err
		}, cachedExistingObject))
}

func isPatch(ctx context.Context) bool {
	info, ok := request.RequestInfoFrom(ctx)
	return ok && info.Verb == "patch"
}

// badPatchErrors begin the plain errors that applying a client's patch to a valid object
// returns: server-side apply's conversions of the applied configuration, and the strategic
// merge patch errors that the patch handler does not already turn into 400 or 422.
var badPatchErrors = []string{
	"failed to create typed patch object (",
	"list element types are not identical: ",
	"invalid value for special key: ",
	"cannot merge lists without merge key for ",
	"merging lists cannot yet be specified in the patch",
	"no elements in any of the given slices",
	"invalid element type in merging list:",
	"cannot find merge key `",
	"unexpected patch strategy: ",
	"The order in patch list:",
	"unknown patch type: ",
	"expected a ", // mergepatch.ErrBadArgType, ErrBadArgKind
	"unknown type: ",
}

// asBadPatch makes a patch error caused by the patch a Bad Request; other errors pass.
func asBadPatch(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	msg := err.Error()
	for _, prefix := range badPatchErrors {
		if strings.HasPrefix(msg, prefix) {
			return apierrors.NewBadRequest(msg)
		}
	}
	// Server-side apply converting the applied configuration (not the merged object).
	if strings.HasPrefix(msg, "failed to convert new object (") && strings.Contains(msg, ") to proper version: unable to convert unstructured object") {
		return apierrors.NewBadRequest(msg)
	}
	if strings.Contains(msg, " does not contain declared merge key: ") { // mergepatch.ErrNoMergeKey
		return apierrors.NewBadRequest(msg)
	}
	return err
}

// tooLargeError is etcd's "too large" error that answers 413.
type tooLargeError struct{ err error }

func (e tooLargeError) Error() string { return e.err.Error() }
func (e tooLargeError) Unwrap() error { return e.err }

func (e tooLargeError) Status() metav1.Status {
	return apierrors.NewRequestEntityTooLargeError(e.err.Error()).Status()
}

// Code and GRPCStatus are those of the etcd error, which the handlers look at.
func (e tooLargeError) Code() grpccodes.Code {
	if c, ok := e.err.(interface{ Code() grpccodes.Code }); ok {
		return c.Code()
	}
	return grpcstatus.Code(e.err)
}

func (e tooLargeError) GRPCStatus() *grpcstatus.Status {
	s, _ := grpcstatus.FromError(e.err)
	return s
}

// asTooLarge wraps the errors of an etcd request too large to send or to accept, as the
// handlers' isTooLargeError recognizes them.
func asTooLarge(err error) error {
	if err == nil {
		return nil
	}
	if c, ok := err.(interface{ Code() grpccodes.Code }); ok && c.Code() == grpccodes.InvalidArgument && err.Error() == "etcdserver: request is too large" {
		return tooLargeError{err}
	}
	if s, ok := err.(interface{ GRPCStatus() *grpcstatus.Status }); ok && s.GRPCStatus().Code() == grpccodes.ResourceExhausted &&
		strings.Contains(s.GRPCStatus().Message(), "trying to send message larger than max") {
		return tooLargeError{err}
	}
	return err
}
