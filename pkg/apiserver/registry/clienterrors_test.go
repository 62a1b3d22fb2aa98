package registry

import (
	"errors"
	"net/http"
	"testing"

	grpccodes "google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAsBadPatch(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "x", errors.New("changed"))
	for _, tc := range []struct {
		err    error
		badReq bool
	}{
		{err: errors.New(`failed to create typed patch object (/base; /v1, Kind=Secret): .data: expected map, got &{x}`), badReq: true},
		{err: errors.New(`failed to convert new object (/n; /v1, Kind=Node) to proper version: unable to convert unstructured object to /v1, Kind=Node: quantities must match the regular expression`), badReq: true},
		{err: errors.New(`list element types are not identical: [[map[containerPort:8080]] [1]]`), badReq: true},
		{err: errors.New(`map: map[] does not contain declared merge key: name`), badReq: true},
		// The merged object failing to convert is berth's problem, not the client's.
		{err: errors.New(`failed to convert new object (/n; /v1, Kind=Node) to proper version (v1): no kind`)},
		{err: errors.New("etcd is gone")},
		{err: conflict},
	} {
		got := asBadPatch(tc.err)
		switch {
		case tc.badReq && (!apierrors.IsBadRequest(got) || got.Error() != tc.err.Error()):
			t.Errorf("asBadPatch(%q) = %v, want a Bad Request with the same text", tc.err, got)
		case !tc.badReq && got != tc.err:
			t.Errorf("asBadPatch(%q) = %v, want it unchanged", tc.err, got)
		}
	}
}

// etcdErr is an error with a gRPC code, as etcd's client returns for a request the server
// refused.
type etcdErr struct{ code grpccodes.Code }

func (e etcdErr) Error() string        { return "etcdserver: request is too large" }
func (e etcdErr) Code() grpccodes.Code { return e.code }

func TestAsTooLarge(t *testing.T) {
	for _, err := range []error{
		grpcstatus.Error(grpccodes.ResourceExhausted, "trying to send message larger than max (3146059 vs. 2097152)"),
		etcdErr{grpccodes.InvalidArgument},
	} {
		got := asTooLarge(err)
		status, ok := got.(apierrors.APIStatus)
		if !ok || status.Status().Code != http.StatusRequestEntityTooLarge {
			t.Errorf("asTooLarge(%v) = %#v, want a 413", err, got)
			continue
		}
		// The handlers' isTooLargeError must still recognize it (they retry without
		// managedFields).
		if s, ok := got.(interface{ GRPCStatus() *grpcstatus.Status }); ok && s.GRPCStatus().Code() != grpcstatus.Code(err) && grpcstatus.Code(err) != grpccodes.Unknown {
			t.Errorf("asTooLarge(%v) has gRPC code %v", err, s.GRPCStatus().Code())
		}
		if c, ok := got.(interface{ Code() grpccodes.Code }); ok {
			if e, isEtcd := err.(etcdErr); isEtcd && (c.Code() != e.code || got.Error() != err.Error()) {
				t.Errorf("asTooLarge(%v) lost the etcd error's code or text: %v %q", err, c.Code(), got.Error())
			}
		}
	}
	for _, err := range []error{nil, errors.New("etcd is gone"), grpcstatus.Error(grpccodes.ResourceExhausted, "quota")} {
		if got := asTooLarge(err); got != err {
			t.Errorf("asTooLarge(%v) = %v, want it unchanged", err, got)
		}
	}
}
