package secret

import (
	corev1 "k8s.io/api/core/v1"
)

// SetDefaults gives a secret type Opaque when it has none, and folds stringData into data.
//
// Upstream folds stringData while converting to its internal type, which has no
// stringData; berth stores the v1 type itself, so the fold happens here, at the same point
// of the request. Like upstream, stringData wins over data for a key in both, and the
// stored object never carries stringData.
func SetDefaults(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}
