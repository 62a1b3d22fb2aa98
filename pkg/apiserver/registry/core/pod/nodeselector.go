package pod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateNodeSelector validates a required node selector as a pod's required node affinity
// is validated. Dynamic resource allocation's slices and allocation results select nodes
// with the same rules, as upstream shares them.
func ValidateNodeSelector(sel *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	return validateNodeSelector(sel, fldPath)
}
