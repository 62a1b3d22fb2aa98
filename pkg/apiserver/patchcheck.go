package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
)

// maxPatchCheckBytes is the largest body the check reads: the API server's request limit.
// A larger body passes unread, and the handler refuses it with 413.
const maxPatchCheckBytes = 3 << 20

// patchTypes are the Go types of the served resources, for the strategic merge patch schema.
var patchTypes = func() map[schema.GroupResource]reflect.Type {
	out := map[schema.GroupResource]reflect.Type{}
	for _, gv := range scheme.GroupVersions {
		for kind, t := range scheme.Scheme.KnownTypes(gv) {
			if strings.HasSuffix(kind, "List") || strings.HasSuffix(kind, "Options") {
				continue
			}
			plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(kind))
			if _, taken := out[plural.GroupResource()]; !taken {
				out[plural.GroupResource()] = t
			}
		}
	}
	return out
}()

// withStrategicPatchCheck refuses, with 400, a strategic merge patch with list elements the
// merge cannot compare: a merge key that is an object or a list ({"addresses": [{"type": {}}]}),
// or such an element of a $setElementOrder list. k8s.io/apimachinery's strategicpatch compares
// them with == and panics ("comparing uncomparable type map[string]interface {}"), which the
// server would answer with 500 and a panic in its log, for a body that is only wrong.
func withStrategicPatchCheck(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := request.RequestInfoFrom(req.Context())
		mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if !ok || !info.IsResourceRequest || req.Method != http.MethodPatch || mediaType != string(types.StrategicMergePatchType) {
			handler.ServeHTTP(w, req)
			return
		}
		t, known := patchTypes[schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}]
		if !known {
			handler.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, maxPatchCheckBytes+1))
		if err != nil {
			handler.ServeHTTP(w, req)
			return
		}
		// The handler reads the body again, whole.
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), req.Body), req.Body}
		if len(body) > maxPatchCheckBytes {
			handler.ServeHTTP(w, req)
			return
		}
		var patch map[string]any
		if json.Unmarshal(body, &patch) != nil {
			handler.ServeHTTP(w, req) // not JSON: the handler says so
			return
		}
		patchMeta, err := strategicpatch.NewPatchMetaFromStruct(reflect.New(t).Interface())
		if err == nil {
			err = checkMergeKeys(patch, patchMeta, nil)
		}
		if err != nil {
			gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(err.Error()), scheme.Codecs, gv, w, req)
			return
		}
		handler.ServeHTTP(w, req)
	})
}

// checkMergeKeys walks a strategic merge patch along its type's schema and reports the first
// merge key (or element of a directive's list) that the merge would compare and that is not a
// scalar. Lists of lists and mixed element types the merge refuses itself, with 422.
func checkMergeKeys(patch map[string]any, patchMeta strategicpatch.LookupPatchMeta, path *field.Path) error {
	for key, value := range patch {
		name := key
		for _, directive := range []string{"$setElementOrder/", "$deleteFromPrimitiveList/"} {
			name = strings.TrimPrefix(name, directive)
		}
		if strings.HasPrefix(name, "$") {
			continue // $patch, $retainKeys: values the merge checks itself
		}
		fieldPath := path.Child(name)
		switch v := value.(type) {
		case map[string]any:
			sub, _, err := patchMeta.LookupPatchMetadataForStruct(name)
			if err != nil {
				continue // a map field or an unknown one: nothing below is merged by key
			}
			if err := checkMergeKeys(v, sub, fieldPath); err != nil {
				return err
			}
		case []any:
			sub, listMeta, err := patchMeta.LookupPatchMetadataForSlice(name)
			if err != nil {
				continue
			}
			mergeKey := listMeta.GetPatchMergeKey()
			// The elements of a directive's list are compared with the list's elements.
			directive := name != key
			for i, element := range v {
				elementPath := fieldPath.Index(i)
				switch e := element.(type) {
				case map[string]any:
					if mk, ok := e[mergeKey]; ok && mergeKey != "" && !isScalar(mk) {
						return fmt.Errorf("invalid strategic merge patch: %s: the merge key must be a string, a number or a boolean", elementPath.Child(mergeKey))
					}
					if err := checkMergeKeys(e, sub, elementPath); err != nil {
						return err
					}
				default:
					if directive && !isScalar(e) {
						return fmt.Errorf("invalid strategic merge patch: %s: must be an object or a scalar", path.Child(key).Index(i))
					}
				}
			}
		}
	}
	return nil
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, string, float64, bool, json.Number:
		return true
	}
	return false
}
