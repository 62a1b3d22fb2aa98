package configmap

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name     string
		in       map[string]string
		wantKeys int
	}{
		{name: "nil data becomes empty map", in: nil, wantKeys: 0},
		{name: "data kept", in: map[string]string{"a": "b"}, wantKeys: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{Data: tc.in}
			SetDefaults(cm)
			if cm.Data == nil || len(cm.Data) != tc.wantKeys {
				t.Errorf("data = %#v, want non-nil with %d keys", cm.Data, tc.wantKeys)
			}
		})
	}
}
