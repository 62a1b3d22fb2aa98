package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/utils/ptr"
)

func TestPersistentVolumeClaimResize(t *testing.T) {
	claim := func(size string, phase corev1.PersistentVolumeClaimPhase, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase},
		}
	}
	const notExpandable = "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
	expandable := func(class string) bool { return class == "elastic" }
	tests := []struct {
		name     string
		old, new *corev1.PersistentVolumeClaim
		sub      string
		policy   ExpansionPolicy
		want     string // "" for allowed
	}{
		{"same size", claim("1Gi", corev1.ClaimPending, nil), claim("1Gi", corev1.ClaimPending, nil), "", nil, ""},
		{"smaller", claim("2Gi", corev1.ClaimBound, nil), claim("1Gi", corev1.ClaimBound, nil), "", nil, ""},
		{"pending claim grows", claim("1Gi", corev1.ClaimPending, nil), claim("2Gi", corev1.ClaimPending, nil), "", nil,
			"Only bound persistent volume claims can be expanded"},
		{"no class", claim("1Gi", corev1.ClaimBound, nil), claim("2Gi", corev1.ClaimBound, nil), "", expandable, notExpandable},
		{"no classes are served", claim("1Gi", corev1.ClaimBound, ptr.To("elastic")), claim("2Gi", corev1.ClaimBound, ptr.To("elastic")), "", nil, notExpandable},
		{"a class that allows it", claim("1Gi", corev1.ClaimBound, ptr.To("elastic")), claim("2Gi", corev1.ClaimBound, ptr.To("elastic")), "", expandable, ""},
		{"a class that does not", claim("1Gi", corev1.ClaimBound, ptr.To("rigid")), claim("2Gi", corev1.ClaimBound, ptr.To("rigid")), "", expandable, notExpandable},
		{"status writes are not resizes", claim("1Gi", corev1.ClaimPending, nil), claim("2Gi", corev1.ClaimPending, nil), "status", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &pvcResize{Handler: admission.NewHandler(admission.Update), allowsExpansion: noStorageClasses}
			if tc.policy != nil {
				p.allowsExpansion = tc.policy
			}
			a := admission.NewAttributesRecord(tc.new, tc.old, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), "ns", "data",
				corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), tc.sub, admission.Update, &metav1.UpdateOptions{}, false, nil)
			err := p.Validate(context.Background(), a, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want 403 with %q", err, tc.want)
			}
		})
	}
}
