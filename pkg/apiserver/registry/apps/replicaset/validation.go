package replicaset

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/workload"
)

// SetDefaults gives a ReplicaSet upstream's apps/v1 defaults: one replica, and the template's
// pod spec defaults.
func SetDefaults(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	pod.SetTemplateDefaults(&rs.Spec.Template)
}

// ValidateReplicaSet validates a new ReplicaSet.
func ValidateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&rs.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, ValidateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

// ValidateReplicaSetUpdate validates an update of a ReplicaSet: as a new one, and its
// selector unchanged.
func ValidateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, ValidateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
	return append(errs, apivalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateReplicaSetSpec validates a ReplicaSet's spec at fldPath.
func ValidateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	errs := workload.Nonnegative(spec.Replicas, fldPath.Child("replicas"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	// Upstream's message says "deployment" for ReplicaSets too.
	selector, selErrs := workload.ValidateSelector(spec.Selector, "deployment", fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	if selector != nil {
		errs = append(errs, workload.ValidateTemplate(&spec.Template, selector, "ReplicaSet", fldPath.Child("template"))...)
	}
	return errs
}

// ValidateReplicaSetStatusUpdate validates a write to replicasets/status.
func ValidateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateReplicaSetStatus(&rs.Status, field.NewPath("status"))...)
}

// ValidateReplicaSetStatus validates a ReplicaSet's status at fldPath.
func ValidateReplicaSetStatus(s *appsv1.ReplicaSetStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct {
		name  string
		value int64
	}{
		{"replicas", int64(s.Replicas)}, {"fullyLabeledReplicas", int64(s.FullyLabeledReplicas)},
		{"readyReplicas", int64(s.ReadyReplicas)}, {"availableReplicas", int64(s.AvailableReplicas)},
		{"observedGeneration", s.ObservedGeneration},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(c.value, fldPath.Child(c.name))...)
	}
	errs = append(errs, workload.Nonnegative(s.TerminatingReplicas, fldPath.Child("terminatingReplicas"))...)
	const msg = "cannot be greater than status.replicas"
	if s.FullyLabeledReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("fullyLabeledReplicas"), s.FullyLabeledReplicas, msg))
	}
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("readyReplicas"), s.ReadyReplicas, msg))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("availableReplicas"), s.AvailableReplicas, msg))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(fldPath.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}
