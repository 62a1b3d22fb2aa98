package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/workload"
)

// ValidateDeployment validates a new Deployment.
func ValidateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&d.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, ValidateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
}

// ValidateDeploymentUpdate validates an update of a Deployment: as a new one, and its
// selector unchanged.
func ValidateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, ValidateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
	return append(errs, apivalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateDeploymentSpec validates a Deployment's spec at fldPath.
func ValidateDeploymentSpec(spec *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	errs := workload.Nonnegative(spec.Replicas, fldPath.Child("replicas"))
	selector, selErrs := workload.ValidateSelector(spec.Selector, "deployment", fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	if selector != nil {
		errs = append(errs, workload.ValidateTemplate(&spec.Template, selector, "ReplicaSet", fldPath.Child("template"))...)
	}
	errs = append(errs, validateStrategy(&spec.Strategy, fldPath.Child("strategy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	// Zero is a valid revisionHistoryLimit: keep no old ReplicaSets.
	errs = append(errs, workload.Nonnegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	if spec.ProgressDeadlineSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.ProgressDeadlineSeconds), fldPath.Child("progressDeadlineSeconds"))...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(fldPath.Child("progressDeadlineSeconds"), spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is '"+string(appsv1.RecreateDeploymentStrategyType)+"'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdate(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(fldPath, s, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
	}
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	unavailable, surge := workload.IntOrZero(ru.MaxUnavailable), workload.IntOrZero(ru.MaxSurge)
	errs := workload.ValidatePositiveIntOrPercent(unavailable, fldPath.Child("maxUnavailable"))
	errs = append(errs, workload.ValidatePositiveIntOrPercent(surge, fldPath.Child("maxSurge"))...)
	if workload.IntOrPercentValue(unavailable) == 0 && workload.IntOrPercentValue(surge) == 0 {
		// Neither a new pod before an old one goes nor an old one before a new one comes: the
		// rollout could never move.
		errs = append(errs, field.Invalid(fldPath.Child("maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0"))
	}
	return append(errs, workload.IsNotMoreThan100Percent(unavailable, fldPath.Child("maxUnavailable"))...)
}

// ValidateDeploymentStatusUpdate validates a write to deployments/status.
func ValidateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("status")
	errs = append(errs, validateStatus(&d.Status, fldPath)...)
	if workload.IsDecremented(d.Status.CollisionCount, old.Status.CollisionCount) {
		errs = append(errs, field.Invalid(fldPath.Child("collisionCount"), ptr.Deref(d.Status.CollisionCount, 0), "cannot be decremented"))
	}
	return errs
}

func validateStatus(s *appsv1.DeploymentStatus, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateNonnegativeField(s.ObservedGeneration, fldPath.Child("observedGeneration"))
	for _, c := range []struct {
		name  string
		value int32
	}{
		{"replicas", s.Replicas}, {"updatedReplicas", s.UpdatedReplicas}, {"readyReplicas", s.ReadyReplicas},
		{"availableReplicas", s.AvailableReplicas}, {"unavailableReplicas", s.UnavailableReplicas},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	errs = append(errs, workload.Nonnegative(s.TerminatingReplicas, fldPath.Child("terminatingReplicas"))...)
	errs = append(errs, workload.Nonnegative(s.CollisionCount, fldPath.Child("collisionCount"))...)
	const msg = "cannot be greater than status.replicas"
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("updatedReplicas"), s.UpdatedReplicas, msg))
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
