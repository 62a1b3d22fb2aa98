package scheme

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// metaKinds are the kinds metav1.AddToGroupVersion adds to every external group version.
var metaKinds = map[string]bool{
	"WatchEvent":      true,
	"ListOptions":     true,
	"GetOptions":      true,
	"DeleteOptions":   true,
	"CreateOptions":   true,
	"UpdateOptions":   true,
	"PatchOptions":    true,
	"Status":          true,
	"APIVersions":     true,
	"APIGroupList":    true,
	"APIGroup":        true,
	"APIResourceList": true,
}

func isMetaKind(kind string) bool { return metaKinds[kind] }

func newObject(t reflect.Type) (runtime.Object, bool) {
	obj, ok := reflect.New(t).Interface().(runtime.Object)
	return obj, ok
}
