package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// pods/ephemeralcontainers is how `kubectl debug` adds a debugging container to a running
// pod: the one write that may change spec.ephemeralContainers, and only by adding to it.

type ephemeralContainersStrategy struct{ registry.Strategy }

// EphemeralContainersStrategy is the update strategy of pods/ephemeralcontainers.
var EphemeralContainersStrategy = ephemeralContainersStrategy{registry.Base}

func (ephemeralContainersStrategy) NamespaceScoped() bool { return true }

// PrepareForUpdate keeps everything of the stored pod but its ephemeral containers, and
// counts a change in metadata.generation.
func (ephemeralContainersStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	ephemeral := pod.Spec.EphemeralContainers
	pod.Spec = *oldPod.Spec.DeepCopy()
	pod.Spec.EphemeralContainers = ephemeral
	pod.Status = oldPod.Status
	metav1.ResetObjectMetaForStatus(pod, oldPod)
	pod.Generation = oldPod.Generation
	if !apiequality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		pod.Generation++
	}
}

func (ephemeralContainersStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidatePodEphemeralContainersUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
}

func (ephemeralContainersStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status", "metadata.deletionTimestamp", "metadata.ownerReferences")
}

// ValidatePodEphemeralContainersUpdate validates a write to pods/ephemeralcontainers, as
// upstream's: the new pod is valid as a whole (each ephemeral container by the rules of
// validateEphemeralContainers), a static pod takes none, and the ones already there are
// neither removed nor changed (compared by name: a patch need not keep their order).
func ValidatePodEphemeralContainersUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := validateMetaUpdate(newPod, oldPod, metaPath)
	errs = append(errs, validatePodMetadataAndSpec(newPod)...)
	if _, ok := oldPod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	specPath := field.NewPath("spec").Child("ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(newPod.Spec.EphemeralContainers))
	for i := range newPod.Spec.EphemeralContainers {
		byName[newPod.Spec.EphemeralContainers[i].Name] = &newPod.Spec.EphemeralContainers[i]
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		switch c, ok := byName[old.Name]; {
		case !ok:
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		case !apiequality.Semantic.DeepEqual(old, *c):
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", old.Name, diff.Diff(old, *c))))
		}
	}
	return errs
}

// NewEphemeralContainersREST returns pods/ephemeralcontainers over the pods' store: GET
// returns the pod, PUT and PATCH change its ephemeral containers.
func NewEphemeralContainersREST(pods *genericregistry.Store) *registry.SubresourceREST {
	return registry.NewSubresourceREST(pods, EphemeralContainersStrategy)
}
