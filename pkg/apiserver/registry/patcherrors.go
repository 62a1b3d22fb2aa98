package registry

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// Server-side apply returns a plain error, which k8s.io/apiserver answers with 500 Internal
// Server Error, when the applied configuration does not fit the type's schema (a string where a
// map belongs, a quantity that does not parse). That is the client's mistake:
// kubernetes/kubernetes#139253 reports it, and the fix proposed there (#139255) answers 400 with
// the same text, as berth does.
const (
	typedPatchError     = "failed to create typed patch object ("
	convertPatchError   = "failed to convert new object ("
	convertPatchErrorIn = ") to proper version: unable to convert unstructured object"
)

// patchErrorStorage is the storage under a store: it turns apply errors caused by the request
// body into 400 Bad Request. The patch is applied inside the update function the store hands
// to GuaranteedUpdate, so this is where its error passes on the way to the client.
type patchErrorStorage struct{ storage.Interface }

func (s patchErrorStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions,
		func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
			out, ttl, err := tryUpdate(input, res)
			return out, ttl, asBadRequest(err)
		}, cachedExistingObject)
}

// asBadRequest makes an apply error about the request body a Bad Request; other errors pass.
func asBadRequest(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	msg := err.Error()
	if strings.HasPrefix(msg, typedPatchError) || (strings.HasPrefix(msg, convertPatchError) && strings.Contains(msg, convertPatchErrorIn)) {
		return apierrors.NewBadRequest(msg)
	}
	return err
}
