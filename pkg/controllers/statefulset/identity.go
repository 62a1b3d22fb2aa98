package statefulset

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

// A StatefulSet's pods have stable identities: pod "<set>-<ordinal>" for each ordinal from
// spec.ordinals.start (0 by default) on, with hostname "<set>-<ordinal>", subdomain the
// set's serviceName (so the cluster DNS names it "<pod>.<service>.<ns>.svc"), and the labels
// statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
// controller-revision-hash. A pod's ordinal is read back from its name, as upstream.

// statefulPodRegex splits a pod name into its set's name and its ordinal.
var statefulPodRegex = regexp.MustCompile("(.*)-([0-9]+)$")

// parentAndOrdinal is the name of pod's set and pod's ordinal as its name tells them: "", -1
// for a name no StatefulSet would give.
func parentAndOrdinal(pod *corev1.Pod) (string, int) {
	m := statefulPodRegex.FindStringSubmatch(pod.Name)
	if len(m) < 3 {
		return "", -1
	}
	ordinal := -1
	if i, err := strconv.ParseInt(m[2], 10, 32); err == nil {
		ordinal = int(i)
	}
	return m[1], ordinal
}

func ordinalOf(pod *corev1.Pod) int {
	_, ordinal := parentAndOrdinal(pod)
	return ordinal
}

// startOrdinal is the set's first ordinal (spec.ordinals.start).
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// replicas is spec.replicas (the API server defaults it to 1).
func replicas(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// endOrdinal is the set's last ordinal (inclusive).
func endOrdinal(set *appsv1.StatefulSet) int {
	return startOrdinal(set) + replicas(set) - 1
}

func inOrdinalRange(pod *corev1.Pod, set *appsv1.StatefulSet) bool {
	o := ordinalOf(pod)
	return o >= startOrdinal(set) && o <= endOrdinal(set)
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// claimName is the name of the claim of template claim for the pod of ordinal (upstream's
// "<claim>-<set>-<ordinal>").
func claimName(set *appsv1.StatefulSet, claim *corev1.PersistentVolumeClaim, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", claim.Name, set.Name, ordinal)
}

// isMemberOf reports whether pod's name makes it one of set's (the filter of the claim).
func isMemberOf(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, _ := parentAndOrdinal(pod)
	return parent == set.Name
}

// identityMatches reports whether pod has the name, namespace and pod-name label of the
// member of set its ordinal makes it.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, ordinal := parentAndOrdinal(pod)
	return ordinal >= 0 && parent == set.Name && pod.Name == podName(set, ordinal) &&
		pod.Namespace == set.Namespace && pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name
}

// updateIdentity gives pod the name, namespace and identity labels of its ordinal.
func updateIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	ordinal := ordinalOf(pod)
	pod.Name = podName(set, ordinal)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
}

// newPod is set's pod of ordinal from set's template, with its identity; hostname and
// subdomain are set on creation only (they are immutable).
func newPod(set *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	pod := podcontrol.PodFromTemplate(&set.Spec.Template, set, controllerref.NewRef(set, controllerKind))
	pod.GenerateName = ""
	pod.Name = podName(set, ordinal)
	updateIdentity(set, pod)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	return pod
}

// newVersionedPod is the pod of ordinal at the revision it should have: the current
// revision below the rolling update's partition, the update revision otherwise (upstream's
// newVersionedStatefulSetPod, whose operator precedence it keeps).
func newVersionedPod(currentSet, updateSet *appsv1.StatefulSet, currentRevision, updateRevision string, ordinal int) *corev1.Pod {
	strategy := currentSet.Spec.UpdateStrategy
	start := startOrdinal(currentSet)
	if strategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		(strategy.RollingUpdate == nil && ordinal < start+int(currentSet.Status.CurrentReplicas)) ||
		(strategy.RollingUpdate != nil && strategy.RollingUpdate.Partition != nil && ordinal < start+int(*strategy.RollingUpdate.Partition)) {
		pod := newPod(currentSet, ordinal)
		setRevision(pod, currentRevision)
		return pod
	}
	pod := newPod(updateSet, ordinal)
	setRevision(pod, updateRevision)
	return pod
}

func setRevision(pod *corev1.Pod, revision string) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetRevisionLabel] = revision
}

// revisionOf is the revision pod was made from ("" if unlabelled).
func revisionOf(pod *corev1.Pod) string {
	return pod.Labels[appsv1.StatefulSetRevisionLabel]
}

// Pod states, as upstream's: a pod is "created" once the API server has given it a phase
// (the planner's placeholders for missing pods have none).
func isCreated(pod *corev1.Pod) bool     { return pod.Status.Phase != "" }
func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// isTerminal: Succeeded counts too, since a StatefulSet pod should run forever; an evicted
// pod or one stopped by a node reboot ends in the phase its exit code gives.
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

func isRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podcontrol.IsPodReady(pod)
}

func isAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return podcontrol.IsPodAvailable(pod, minReadySeconds, now)
}

func isUnavailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return !isAvailable(pod, minReadySeconds, now) || isTerminating(pod)
}

// allowsBurst: Parallel pod management creates and deletes without waiting for order.
func allowsBurst(set *appsv1.StatefulSet) bool {
	return set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
}
