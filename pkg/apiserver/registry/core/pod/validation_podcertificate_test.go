package pod

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// TestValidatePodCertificateProjection: upstream's rules and messages for a podCertificate
// projected source, the limits of its maxExpirationSeconds among them (the conformance test
// "should reject pod creation when MaxExpirationSeconds exceeds maximum (91d)" looks for the
// message).
func TestValidatePodCertificateProjection(t *testing.T) {
	base := func() *corev1.PodCertificateProjection {
		return &corev1.PodCertificateProjection{SignerName: "example.com/spiffe", KeyType: "ED25519", CredentialBundlePath: "creds.pem"}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.PodCertificateProjection)
		want   string // a substring of the errors; "" for none
	}{
		{"valid", func(*corev1.PodCertificateProjection) {}, ""},
		{"91 days for another signer", func(c *corev1.PodCertificateProjection) { c.MaxExpirationSeconds = ptr.To[int32](91 * 86400) }, ""},
		{"over 91 days", func(c *corev1.PodCertificateProjection) { c.MaxExpirationSeconds = ptr.To[int32](91*86400 + 1) },
			"maxExpirationSeconds: Invalid value: 7862401: if provided, maxExpirationSeconds must be <= 7862400"},
		{"over a day for a Kubernetes signer", func(c *corev1.PodCertificateProjection) {
			c.SignerName = "kubernetes.io/kube-apiserver-client"
			c.MaxExpirationSeconds = ptr.To[int32](86401)
		}, "if provided, maxExpirationSeconds must be <= 86400"},
		{"under an hour", func(c *corev1.PodCertificateProjection) { c.MaxExpirationSeconds = ptr.To[int32](3599) },
			"if provided, maxExpirationSeconds must be >= 3600"},
		{"signer without a path", func(c *corev1.PodCertificateProjection) { c.SignerName = "example.com" }, "signerName"},
		{"user annotation without a domain", func(c *corev1.PodCertificateProjection) {
			c.UserAnnotations = map[string]string{"plain": "x"}
		}, "userAnnotations"},
		{"no path", func(c *corev1.PodCertificateProjection) { c.CredentialBundlePath = "" },
			"specify at least one of credentialBundlePath, keyPath, and certificateChainPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mutate(c)
			errs := validatePodCertificateProjection(c, field.NewPath("spec", "volumes").Index(0).Child("projected", "sources").Index(0).Child("podCertificate"),
				func(string, interface{}) {})
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("errors %v, want none", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors %v, want one with %q", got, tc.want)
			}
		})
	}
}
