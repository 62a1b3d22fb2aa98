package resourcename

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestResourceNames(t *testing.T) {
	for _, tc := range []struct {
		name                              corev1.ResourceName
		native, extended, huge, hugeQuota bool
	}{
		{name: "cpu", native: true},
		{name: "kubernetes.io/something", native: true},
		{name: "hugepages-2Mi", native: true, huge: true, hugeQuota: true},
		{name: "requests.hugepages-2Mi", native: true, hugeQuota: true},
		{name: "example.com/gpu", extended: true},
		{name: "requests.example.com/gpu"},
		{name: "example.com/not a name"},
	} {
		if got := IsNative(tc.name); got != tc.native {
			t.Errorf("IsNative(%q) = %v", tc.name, got)
		}
		if got := IsExtended(tc.name); got != tc.extended {
			t.Errorf("IsExtended(%q) = %v", tc.name, got)
		}
		if got := IsHugePages(tc.name); got != tc.huge {
			t.Errorf("IsHugePages(%q) = %v", tc.name, got)
		}
		if got := IsHugePagesQuota(tc.name); got != tc.hugeQuota {
			t.Errorf("IsHugePagesQuota(%q) = %v", tc.name, got)
		}
	}
}
