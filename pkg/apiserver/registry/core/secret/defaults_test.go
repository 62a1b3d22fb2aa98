package secret

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   corev1.Secret
		want corev1.Secret
	}{
		{
			name: "empty type becomes Opaque",
			in:   corev1.Secret{},
			want: corev1.Secret{Type: corev1.SecretTypeOpaque},
		},
		{
			name: "type kept",
			in:   corev1.Secret{Type: corev1.SecretTypeTLS},
			want: corev1.Secret{Type: corev1.SecretTypeTLS},
		},
		{
			name: "stringData folded into nil data",
			in:   corev1.Secret{StringData: map[string]string{"user": "admin"}},
			want: corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"user": []byte("admin")}},
		},
		{
			name: "stringData wins over data",
			in: corev1.Secret{
				Data:       map[string][]byte{"user": []byte("old"), "pass": []byte("p")},
				StringData: map[string]string{"user": "new"},
			},
			want: corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"user": []byte("new"), "pass": []byte("p")}},
		},
		{
			name: "empty stringData dropped",
			in:   corev1.Secret{StringData: map[string]string{}},
			want: corev1.Secret{Type: corev1.SecretTypeOpaque},
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
