package priorityclass

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

const (
	// HighestUserDefinablePriority is the highest value a user's class may have; higher
	// values are reserved for the system classes.
	HighestUserDefinablePriority = int32(1000000000)
	// SystemCriticalPriority is where the system classes' range starts.
	SystemCriticalPriority = 2 * HighestUserDefinablePriority
	// SystemPriorityClassPrefix marks names reserved for the system classes.
	SystemPriorityClassPrefix = "system-"
	// SystemClusterCritical is the class of add-ons the cluster needs, which may move.
	SystemClusterCritical = SystemPriorityClassPrefix + "cluster-critical"
	// SystemNodeCritical is the class of pods that must not leave their node.
	SystemNodeCritical = SystemPriorityClassPrefix + "node-critical"
)

// SystemPriorityClasses returns fresh copies of the built-in classes, which the API
// server creates at start-up, in upstream's order.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	policy := func() *corev1.PreemptionPolicy {
		p := corev1.PreemptLowerPriority
		return &p
	}
	return []*schedulingv1.PriorityClass{
		{
			ObjectMeta:       metav1.ObjectMeta{Name: SystemNodeCritical},
			Value:            SystemCriticalPriority + 1000,
			Description:      "Used for system critical pods that must not be moved from their current node.",
			PreemptionPolicy: policy(),
		},
		{
			ObjectMeta:       metav1.ObjectMeta{Name: SystemClusterCritical},
			Value:            SystemCriticalPriority,
			Description:      "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
			PreemptionPolicy: policy(),
		},
	}
}

// isKnownSystemClass reports whether a class with the "system-" prefix is exactly one of
// the built-in classes, and if not, why.
func isKnownSystemClass(pc *schedulingv1.PriorityClass) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name != pc.Name {
			continue
		}
		if sys.Value != pc.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", sys.Name, sys.Value)
		}
		if sys.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", sys.Name, sys.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}

// ValidatePriorityClass validates a class on create: user classes stay at or below
// HighestUserDefinablePriority, and "system-" names belong to the built-in classes.
func ValidatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&pc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(pc.Finalizers, metaPath.Child("finalizers"))...)

	if strings.HasPrefix(pc.Name, SystemPriorityClassPrefix) {
		if err := isKnownSystemClass(pc); err != nil {
			errs = append(errs, field.Forbidden(metaPath.Child("name"),
				"priority class names with '"+SystemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}

	if pc.PreemptionPolicy != nil {
		policyPath := field.NewPath("preemptionPolicy")
		switch *pc.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(policyPath, ""))
		default:
			errs = append(errs, field.NotSupported(policyPath, *pc.PreemptionPolicy,
				[]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	return errs
}

// ValidatePriorityClassUpdate validates an update: value and preemptionPolicy never
// change, since pods already admitted carry the class's values.
func ValidatePriorityClassUpdate(newPC, oldPC *schedulingv1.PriorityClass) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newPC.ObjectMeta, &oldPC.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newPC.Finalizers, metaPath.Child("finalizers"))...)
	if newPC.Value != oldPC.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(errs, apivalidation.ValidateImmutableField(newPC.PreemptionPolicy, oldPC.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}
