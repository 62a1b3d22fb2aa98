package configmap

import (
	corev1 "k8s.io/api/core/v1"
)

// SetDefaults gives a config map an empty, non-nil data map, as upstream does, so that
// the immutability check compares like with like however the client wrote "no data".
func SetDefaults(cm *corev1.ConfigMap) {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}
