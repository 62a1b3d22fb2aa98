package pod

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/qos"
)

// pods/resize is the in-place resize of a pod's containers (KEP 1287): a write to it may
// change the containers' cpu and memory requests and limits and their resize policies, and
// nothing else; the node agent then accepts the new size (or leaves it pending) and applies
// it. Resizing pod-level resources and memory-backed emptyDir size limits, behind feature
// gates upstream, is refused as upstream refuses it with the gates off.

type resizeStrategy struct{ registry.Strategy }

// ResizeStrategy is the update strategy of pods/resize.
var ResizeStrategy = resizeStrategy{registry.Base}

func (resizeStrategy) NamespaceScoped() bool { return true }

// PrepareForUpdate keeps only the containers' new resources and resize policies (when the
// containers are the old ones, in order; otherwise validation refuses the write), and counts
// the change in metadata.generation.
func (resizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	if len(pod.Spec.Containers) == len(oldPod.Spec.Containers) && len(pod.Spec.InitContainers) == len(oldPod.Spec.InitContainers) {
		containers, okC := withResizeFields(pod.Spec.Containers, oldPod.Spec.Containers)
		inits, okI := withResizeFields(pod.Spec.InitContainers, oldPod.Spec.InitContainers)
		if okC && okI {
			resources := pod.Spec.Resources
			pod.Spec = *oldPod.Spec.DeepCopy()
			pod.Spec.Containers, pod.Spec.InitContainers = containers, inits
			// Kept for validation to refuse a change of them.
			pod.Spec.Resources = resources
			pod.Status = oldPod.Status
			metav1.ResetObjectMetaForStatus(pod, oldPod)
		}
	}
	pod.Generation = oldPod.Generation
	if !apiequality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		pod.Generation++
	}
}

// withResizeFields is old with the resources and resize policies of updated, if updated has
// the same containers in the same order.
func withResizeFields(updated, old []corev1.Container) ([]corev1.Container, bool) {
	if len(updated) == 0 {
		return updated, true
	}
	out := make([]corev1.Container, len(old))
	for i := range old {
		if updated[i].Name != old[i].Name {
			return nil, false
		}
		out[i] = *old[i].DeepCopy()
		out[i].Resources = updated[i].Resources
		out[i].ResizePolicy = updated[i].ResizePolicy
	}
	return out, true
}

func (resizeStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidatePodResize(obj.(*corev1.Pod), old.(*corev1.Pod))
}

func (resizeStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status", "metadata.deletionTimestamp", "metadata.ownerReferences")
}

// ValidatePodResize validates a write to pods/resize, as upstream's ValidatePodResize with
// the feature gates of v1.37 (init containers resizable, pod-level resources and volumes not).
func ValidatePodResize(newPod, oldPod *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validateMetaUpdate(newPod, oldPod, field.NewPath("metadata"))
	errs = append(errs, validatePodMetadataAndSpec(newPod)...)

	if _, ok := oldPod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if oldPod.Spec.OS != nil && oldPod.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	if qos.PodQOSClass(oldPod) != qos.ComputePodQOS(newPod) {
		errs = append(errs, field.Invalid(specPath, newPod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !nodeSupportsResize(oldPod) {
		errs = append(errs, field.Forbidden(specPath, "Pod running on node without support for resize"))
	}
	podLevel := func(p *corev1.Pod) bool {
		return p.Spec.Resources != nil && len(p.Spec.Resources.Requests)+len(p.Spec.Resources.Limits) > 0
	}
	if podLevel(oldPod) || podLevel(newPod) {
		return append(errs, field.Forbidden(field.NewPath(""), "resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled"))
	}

	if orderErrs := validateResizeContainerOrder(newPod, oldPod, specPath); len(orderErrs) > 0 {
		return append(errs, orderErrs...)
	}
	for i := range oldPod.Spec.InitContainers {
		errs = append(errs, validateContainerResize(&newPod.Spec.InitContainers[i].Resources, &oldPod.Spec.InitContainers[i].Resources,
			specPath.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range oldPod.Spec.Containers {
		errs = append(errs, validateContainerResize(&newPod.Spec.Containers[i].Resources, &oldPod.Spec.Containers[i].Resources,
			specPath.Child("containers").Index(i).Child("resources"))...)
	}

	// With cpu and memory taken back to the old values, nothing may differ.
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		c := &munged.Containers[i]
		oldC := &oldPod.Spec.Containers[i]
		withOldCPUAndMemory(c, oldC)
		if !apiequality.Semantic.DeepEqual(*c, *oldC) {
			errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
		}
	}
	for i := range munged.InitContainers {
		c := &munged.InitContainers[i]
		oldC := &oldPod.Spec.InitContainers[i]
		modified := !apiequality.Semantic.DeepEqual(newPod.Spec.InitContainers[i], *oldC)
		withOldCPUAndMemory(c, oldC)
		if !apiequality.Semantic.DeepEqual(*c, *oldC) {
			errs = append(errs, field.Forbidden(specPath.Child("initContainers").Index(i), "only cpu and memory resources for init or sidecar containers are mutable"))
		}
		if modified && !isRestartableInit(c) {
			for _, p := range c.ResizePolicy {
				if p.RestartPolicy == corev1.RestartContainer {
					errs = append(errs, field.Forbidden(specPath.Child("initContainers").Index(i), "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
				}
			}
		}
	}
	if !apiequality.Semantic.DeepEqual(newPod.Spec.Volumes, oldPod.Spec.Volumes) {
		errs = append(errs, field.Forbidden(specPath.Child("volumes"), "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	if len(errs) > 0 {
		return errs
	}
	if !apiequality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	return errs
}

// nodeSupportsResize: a pod whose running containers report no resources runs on a node too
// old to resize it; without running containers nobody can tell, and it may.
func nodeSupportsResize(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func isRestartableInit(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// validateResizeContainerOrder: no container is added, removed, renamed or moved.
func validateResizeContainerOrder(newPod, oldPod *corev1.Pod, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name     string
		new, old []corev1.Container
	}{
		{"containers", newPod.Spec.Containers, oldPod.Spec.Containers},
		{"initContainers", newPod.Spec.InitContainers, oldPod.Spec.InitContainers},
	} {
		if len(list.new) != len(list.old) {
			errs = append(errs, field.Forbidden(specPath.Child(list.name), list.name+" may not be added or removed on resize"))
			continue
		}
		for i := range list.old {
			if list.new[i].Name != list.old[i].Name {
				errs = append(errs, field.Forbidden(specPath.Child(list.name).Index(i).Child("name"), list.name+" may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

// validateContainerResize: requests and limits may change or be added, not removed.
func validateContainerResize(newR, oldR *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(newR.Requests, oldR.Requests) {
		errs = append(errs, field.Forbidden(fldPath.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(newR.Limits, oldR.Limits) {
		errs = append(errs, field.Forbidden(fldPath.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

func resourcesRemoved(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// withOldCPUAndMemory gives c the cpu and memory of old, keeping its other resources (and
// its resize policies, which may change).
func withOldCPUAndMemory(c, old *corev1.Container) {
	munge := func(list, oldList corev1.ResourceList) corev1.ResourceList {
		if list == nil && oldList == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for name, q := range list {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				out[name] = q
			}
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := oldList[name]; ok {
				out[name] = q
			}
		}
		return out
	}
	c.Resources = corev1.ResourceRequirements{
		Limits:   munge(c.Resources.Limits, old.Resources.Limits),
		Requests: munge(c.Resources.Requests, old.Resources.Requests),
		Claims:   c.Resources.Claims,
	}
	c.ResizePolicy = old.ResizePolicy
}

// ResizeREST serves pods/resize. A resize of a scheduled pod must also fit the node's
// allocatable cpu and memory (upstream's PodResizeValidator admission): one that never could
// is refused here rather than left pending forever.
type ResizeREST struct {
	*registry.SubresourceREST
	nodes *genericregistry.Store
}

// NewResizeREST returns pods/resize over the pods' and the nodes' stores.
func NewResizeREST(pods, nodes *genericregistry.Store) *ResizeREST {
	return &ResizeREST{SubresourceREST: registry.NewSubresourceREST(pods, ResizeStrategy), nodes: nodes}
}

// Update resizes the pod, once the resize passed the node's allocatable.
func (r *ResizeREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	validate := func(ctx context.Context, obj, old runtime.Object) error {
		if updateValidation != nil {
			if err := updateValidation(ctx, obj, old); err != nil {
				return err
			}
		}
		return r.validateNodeAllocatable(ctx, obj.(*corev1.Pod), old.(*corev1.Pod))
	}
	return r.SubresourceREST.Update(ctx, name, objInfo, createValidation, validate, forceAllowCreate, options)
}

func (r *ResizeREST) validateNodeAllocatable(ctx context.Context, pod, oldPod *corev1.Pod) error {
	if pod.Spec.NodeName == "" || pod.Generation == oldPod.Generation || r.nodes == nil {
		return nil
	}
	forbidden := func(err error) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, err)
	}
	obj, err := r.nodes.Get(ctx, pod.Spec.NodeName, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return forbidden(fmt.Errorf("node %q not found", pod.Spec.NodeName))
	}
	if err != nil {
		return forbidden(fmt.Errorf("failed to get node %q: %w", pod.Spec.NodeName, err))
	}
	node := obj.(*corev1.Node)
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && os != "linux" {
		return withCause(forbidden(fmt.Errorf("pod resize is only supported on linux nodes, node %q is %q", node.Name, os)), "UnsupportedPlatform")
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu, mem := requests[corev1.ResourceCPU], requests[corev1.ResourceMemory]
	var msg []string
	if a := node.Status.Allocatable.Cpu(); cpu.Cmp(*a) > 0 {
		msg = append(msg, fmt.Sprintf("cpu, requested: %d, allocatable: %d", cpu.MilliValue(), a.MilliValue()))
	}
	if a := node.Status.Allocatable.Memory(); mem.Cmp(*a) > 0 {
		msg = append(msg, fmt.Sprintf("memory, requested: %d, allocatable: %d", mem.Value(), a.Value()))
	}
	if len(msg) > 0 {
		return withCause(forbidden(fmt.Errorf("node didn't have enough allocatable resources: %s", strings.Join(msg, "; "))), "NodeCapacity")
	}
	return nil
}

func withCause(err error, cause metav1.CauseType) error {
	if s, ok := err.(*apierrors.StatusError); ok && s.ErrStatus.Details != nil {
		s.ErrStatus.Details.Causes = append(s.ErrStatus.Details.Causes, metav1.StatusCause{Type: cause})
	}
	return err
}
