// Package resourcename holds Kubernetes' rules for the names of compute resources (cpu,
// hugepages-2Mi, example.com/gpu), which pod validation and defaulting, ResourceQuota
// validation and the quota evaluators share: one copy each, as upstream keeps them in its
// core v1 helpers. The first piece of DESIGN.md's pkg/apis/core.
package resourcename

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// IsNative reports whether name is in the kubernetes.io namespace; unprefixed names are
// implicitly there.
func IsNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// IsExtended reports whether name is a device-plugin style resource: outside kubernetes.io,
// not a quota's "requests." name, and a qualified name in its quota form
// "requests.<name>".
func IsExtended(name corev1.ResourceName) bool {
	if IsNative(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// IsHugePages reports whether name is a huge page size (hugepages-2Mi).
func IsHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// IsHugePagesQuota reports whether name is a huge page size as a quota names it, with or
// without "requests." (hugepages-2Mi, requests.hugepages-2Mi).
func IsHugePagesQuota(name corev1.ResourceName) bool {
	return IsHugePages(name) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}
