package admission

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

func TestStorageObjectInUseProtection(t *testing.T) {
	attrs := func(obj runtime.Object, resource, sub string) admission.Attributes {
		return admission.NewAttributesRecord(obj, nil, corev1.SchemeGroupVersion.WithKind("X"), "ns", "x",
			corev1.SchemeGroupVersion.WithResource(resource), sub, admission.Create, &metav1.CreateOptions{}, false, nil)
	}
	claim := func(finalizers ...string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: finalizers}}
	}
	volume := func(finalizers ...string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: finalizers}}
	}
	tests := []struct {
		name     string
		obj      runtime.Object
		resource string
		sub      string
		want     []string
	}{
		{"claim", claim(), "persistentvolumeclaims", "", []string{PVCProtectionFinalizer}},
		{"claim with other finalizers", claim("example.com/x"), "persistentvolumeclaims", "", []string{"example.com/x", PVCProtectionFinalizer}},
		{"claim that has it", claim(PVCProtectionFinalizer), "persistentvolumeclaims", "", []string{PVCProtectionFinalizer}},
		{"claim status", claim(), "persistentvolumeclaims", "status", nil},
		{"volume", volume(), "persistentvolumes", "", []string{PVProtectionFinalizer}},
		{"volume that has it", volume(PVProtectionFinalizer), "persistentvolumes", "", []string{PVProtectionFinalizer}},
		{"a volume posing as a claim is left alone", volume(), "persistentvolumeclaims", "", nil},
		{"other resources", &corev1.ConfigMap{}, "configmaps", "", nil},
	}
	p := &storageProtection{Handler: admission.NewHandler(admission.Create)}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.Admit(context.Background(), attrs(tc.obj, tc.resource, tc.sub), nil); err != nil {
				t.Fatal(err)
			}
			m, _ := tc.obj.(metav1.Object)
			if got := m.GetFinalizers(); !slices.Equal(got, tc.want) {
				t.Errorf("finalizers %v, want %v", got, tc.want)
			}
		})
	}
	if p.Handles(admission.Update) || !p.Handles(admission.Create) {
		t.Error("the plugin acts on creates only")
	}
	if !slices.Contains(Order, StorageObjectInUseProtectionPluginName) {
		t.Error("the plugin is not in the admission chain")
	}
}
