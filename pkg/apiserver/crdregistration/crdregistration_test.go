package crdregistration

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func crd(group string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Versions: versions},
	}
}

func TestDesired(t *testing.T) {
	served := func(v string) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true}
	}
	unserved := func(v string) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: v}
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{
		crd("example.com", served("v1"), unserved("v1beta1")),
		crd("other.io", served("v2")),
	}
	for _, tc := range []struct {
		gv   schema.GroupVersion
		want bool
	}{
		{schema.GroupVersion{Group: "example.com", Version: "v1"}, true},
		// A version no CRD serves any more loses its APIService.
		{schema.GroupVersion{Group: "example.com", Version: "v1beta1"}, false},
		{schema.GroupVersion{Group: "example.com", Version: "v2"}, false},
		{schema.GroupVersion{Group: "other.io", Version: "v2"}, true},
		{schema.GroupVersion{Group: "gone.io", Version: "v1"}, false},
	} {
		got := Desired(tc.gv, crds)
		if (got != nil) != tc.want {
			t.Errorf("Desired(%v) = %v, want an APIService: %v", tc.gv, got, tc.want)
			continue
		}
		if got == nil {
			continue
		}
		// Below every built-in group, as kube-apiserver registers CRD group versions.
		if got.Name != Name(tc.gv) || got.Spec.Group != tc.gv.Group || got.Spec.Version != tc.gv.Version ||
			got.Spec.Service != nil || got.Spec.GroupPriorityMinimum != 1000 || got.Spec.VersionPriority != 100 {
			t.Errorf("Desired(%v) = %+v", tc.gv, got)
		}
	}
}
