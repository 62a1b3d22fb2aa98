package registry

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAsBadRequest(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "x", errors.New("changed"))
	for _, tc := range []struct {
		err     error
		badReq  bool
		keepErr bool
	}{
		{err: errors.New(`failed to create typed patch object (/base; /v1, Kind=Secret): .data: expected map, got &{x}`), badReq: true},
		{err: errors.New(`failed to convert new object (/n; /v1, Kind=Node) to proper version: unable to convert unstructured object to /v1, Kind=Node: quantities must match the regular expression`), badReq: true},
		// The object after the merge failing to convert is berth's problem, not the client's.
		{err: errors.New(`failed to convert new object (/n; /v1, Kind=Node) to proper version (v1): no kind`), keepErr: true},
		{err: errors.New("etcd is gone"), keepErr: true},
		{err: conflict, keepErr: true},
	} {
		got := asBadRequest(tc.err)
		switch {
		case tc.badReq && (!apierrors.IsBadRequest(got) || got.Error() != tc.err.Error()):
			t.Errorf("asBadRequest(%q) = %v, want a Bad Request with the same text", tc.err, got)
		case tc.keepErr && got != tc.err:
			t.Errorf("asBadRequest(%q) = %v, want it unchanged", tc.err, got)
		}
	}
	if asBadRequest(nil) != nil {
		t.Error("asBadRequest(nil) is not nil")
	}
}
