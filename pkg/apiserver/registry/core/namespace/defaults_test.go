package namespace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   corev1.Namespace
		want corev1.Namespace
	}{
		{
			name: "empty namespace gets label and phase",
			in:   corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			want: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{corev1.LabelMetadataName: "team-a"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "wrong name label is overwritten, other labels kept",
			in: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{
				corev1.LabelMetadataName: "other", "env": "prod",
			}}},
			want: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{corev1.LabelMetadataName: "team-a", "env": "prod"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "generateName only: no label yet",
			in:   corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tmp-"}},
			want: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "tmp-"},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "terminating phase kept",
			in: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "x"},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
			want: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{corev1.LabelMetadataName: "x"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.DeepCopy()
			SetDefaults(got)
			if !apiequality.Semantic.DeepEqual(*got, tc.want) {
				t.Errorf("SetDefaults:\n got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}
