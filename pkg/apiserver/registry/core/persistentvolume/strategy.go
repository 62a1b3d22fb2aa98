package persistentvolume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct {
	registry.Strategy
	clock clock.PassiveClock
}

// Strategy is the create, update and delete strategy of volumes: the status is the binder's
// (a new volume starts Pending, stamped with the time of that phase), the spec the user's.
var Strategy = newStrategy(clock.RealClock{})

func newStrategy(clk clock.PassiveClock) strategy { return strategy{registry.Base, clk} }

func (strategy) NamespaceScoped() bool { return false }

func (s strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pv := obj.(*corev1.PersistentVolume)
	now := metav1.NewTime(s.clock.Now())
	pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.PersistentVolume).Status = old.(*corev1.PersistentVolume).Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidatePersistentVolume(obj.(*corev1.PersistentVolume), OptionsFor(nil))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	o := old.(*corev1.PersistentVolume)
	return ValidatePersistentVolumeUpdate(obj.(*corev1.PersistentVolume), o, OptionsFor(o))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return Warnings(obj.(*corev1.PersistentVolume))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return Warnings(obj.(*corev1.PersistentVolume))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of persistentvolumes/status, which keeps the spec.
var StatusStrategy = statusStrategy{Strategy}

// PrepareForUpdate keeps the spec and stamps a change of phase with its time, unless the
// writer gave a new time itself; a write that keeps the phase keeps the time.
func (s statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pv, o := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
	pv.Spec = o.Spec
	switch {
	case pv.Status.Phase == o.Status.Phase && pv.Status.LastPhaseTransitionTime == nil:
		pv.Status.LastPhaseTransitionTime = o.Status.LastPhaseTransitionTime
	case pv.Status.Phase != o.Status.Phase &&
		(pv.Status.LastPhaseTransitionTime == nil || pv.Status.LastPhaseTransitionTime.Equal(o.Status.LastPhaseTransitionTime)):
		now := metav1.NewTime(s.clock.Now())
		pv.Status.LastPhaseTransitionTime = &now
	}
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidatePersistentVolumeStatusUpdate(obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec")
}

// Fields are the fields volumes can be selected by: metadata, and "name", which upstream
// keeps for old clients.
func Fields(obj runtime.Object) fields.Set {
	pv := obj.(*corev1.PersistentVolume)
	set := generic.ObjectMetaFieldsSet(&pv.ObjectMeta, false)
	set["name"] = pv.Name
	return set
}

// deprecatedNodeLabels are the node labels a volume's node affinity should no longer use,
// with upstream's word on each.
var deprecatedNodeLabels = map[string]string{
	`beta.kubernetes.io/arch`:                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	`beta.kubernetes.io/os`:                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	`failure-domain.beta.kubernetes.io/region`:      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	`failure-domain.beta.kubernetes.io/zone`:        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	`beta.kubernetes.io/instance-type`:              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	`app.kubernetes.io/created-by`:                  `deprecated since v1.9`,
	`scheduler.alpha.kubernetes.io/preferAvoidPods`: `deprecated since v1.22; use Taints and Tolerations instead`,
	`node-role.kubernetes.io/master`:                `use "node-role.kubernetes.io/control-plane" instead`,
}

// Warnings are upstream's warnings of a volume: deprecated annotations, the Recycle policy,
// deprecated node labels in its affinity and sources whose plugins are gone.
func Warnings(pv *corev1.PersistentVolume) []string {
	var warnings []string
	for _, a := range []struct{ key, message string }{
		{corev1.BetaStorageClassAnnotation, `deprecated since v1.8; use "storageClassName" attribute instead`},
		{corev1.MountOptionAnnotation, `deprecated since v1.31; use "mountOptions" attribute instead`},
	} {
		if _, ok := pv.Annotations[a.key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", field.NewPath("metadata", "annotations").Key(a.key), a.message))
		}
	}
	spec := field.NewPath("spec")
	if pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		warnings = append(warnings, fmt.Sprintf("%s: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.",
			spec.Child("persistentVolumeReclaimPolicy")))
	}
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		termsPath := spec.Child("nodeAffinity", "required", "nodeSelectorTerms")
		for i, term := range a.Required.NodeSelectorTerms {
			for j, req := range term.MatchExpressions {
				if msg, ok := deprecatedNodeLabels[req.Key]; ok {
					warnings = append(warnings, fmt.Sprintf("%s: %s is %s", termsPath.Index(i).Child("matchExpressions").Index(j).Child("key"), req.Key, msg))
				}
			}
		}
	}
	s := &pv.Spec.PersistentVolumeSource
	for _, d := range []struct {
		set           bool
		name, message string
	}{
		{s.CephFS != nil, "cephfs", "deprecated in v1.28, non-functional in v1.31+"},
		{s.PhotonPersistentDisk != nil, "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"},
		{s.ScaleIO != nil, "scaleIO", "deprecated in v1.16, non-functional in v1.22+"},
		{s.StorageOS != nil, "storageOS", "deprecated in v1.22, non-functional in v1.25+"},
		{s.Glusterfs != nil, "glusterfs", "deprecated in v1.25, non-functional in v1.26+"},
		{s.RBD != nil, "rbd", "deprecated in v1.28, non-functional in v1.31+"},
	} {
		if d.set {
			warnings = append(warnings, fmt.Sprintf("%s: %s", spec.Child(d.name), d.message))
		}
	}
	return warnings
}
