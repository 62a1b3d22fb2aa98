package pod

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/qos"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and graceful-delete strategy of pods.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// PrepareForCreate starts a pod's life: Pending, with its QoS class fixed for good, and
// PodScheduled=False while scheduling gates hold it back.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Generation = 1
	DefaultPodLevelResources(pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qos.ComputePodQOS(pod)}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
	mergeMatchLabelKeys(pod)
}

// PrepareForUpdate keeps the status, which only pods/status changes, and counts spec changes
// in metadata.generation.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	pod.Status = oldPod.Status
	pod.Generation = oldPod.Generation
	if !apiequality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		pod.Generation++
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidatePod(obj.(*corev1.Pod))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidatePodUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
}

// WarningsOnCreate warns of a name that is no DNS label (the pod's hostname comes from it),
// then of the pod's own warnings.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	pod := obj.(*corev1.Pod)
	var warnings []string
	if msgs := validation.IsDNS1123Label(pod.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(warnings, Warnings(pod, nil)...)
}

// WarningsOnUpdate warns of nothing, as upstream: people seldom write pods by hand once they
// run, and updates (of labels, annotations, images) are frequent enough that the checks
// would cost more than they tell.
func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

// CheckGracefulDelete decides the grace period of a pod's deletion: the caller's, else the
// pod's terminationGracePeriodSeconds; none for a pod that no node runs (unscheduled, or
// already terminal), since nobody would ever confirm its end.
func (strategy) CheckGracefulDelete(_ context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	if options == nil {
		return false
	}
	pod := obj.(*corev1.Pod)
	var period int64
	switch {
	case options.GracePeriodSeconds != nil:
		period = *options.GracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		period = 0
	}
	// A negative period is a wish for "immediately"; 1 s still lets the node agent stop the
	// containers before the object goes.
	if period < 0 {
		period = 1
	}
	options.GracePeriodSeconds = &period
	return true
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of pods/status, the node agent's and the scheduler's
// way of reporting.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool { return true }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	pod.Spec = oldPod.Spec
	pod.DeletionTimestamp = oldPod.DeletionTimestamp
	pod.OwnerReferences = oldPod.OwnerReferences
	pod.Generation = oldPod.Generation
	// The class is fixed at creation; a reporter that forgot it does not erase it.
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = oldPod.Status.QOSClass
	}
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidatePodStatusUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
}

// WarningsOnUpdate warns of pod and host IPs reported in a form that is not canonical.
func (statusStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	pod := obj.(*corev1.Pod)
	var warnings []string
	for i, ip := range pod.Status.PodIPs {
		warnings = append(warnings, validation.GetWarningsForIP(field.NewPath("status", "podIPs").Index(i).Child("ip"), ip.IP)...)
	}
	for i, ip := range pod.Status.HostIPs {
		warnings = append(warnings, validation.GetWarningsForIP(field.NewPath("status", "hostIPs").Index(i).Child("ip"), ip.IP)...)
	}
	return warnings
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec", "metadata.deletionTimestamp", "metadata.ownerReferences")
}

// Fields are the fields a pod can be selected by.
func Fields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	set := generic.ObjectMetaFieldsSet(&pod.ObjectMeta, true)
	set["spec.nodeName"] = pod.Spec.NodeName
	set["spec.restartPolicy"] = string(pod.Spec.RestartPolicy)
	set["spec.schedulerName"] = pod.Spec.SchedulerName
	set["spec.serviceAccountName"] = pod.Spec.ServiceAccountName
	set["spec.hostNetwork"] = strconv.FormatBool(pod.Spec.HostNetwork)
	set["status.phase"] = string(pod.Status.Phase)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	set["status.podIP"] = podIP
	set["status.nominatedNodeName"] = pod.Status.NominatedNodeName
	return set
}

// NodeName is the value the watch cache indexes pods by: a node agent watches only its own.
func NodeName(obj runtime.Object) string {
	return obj.(*corev1.Pod).Spec.NodeName
}
