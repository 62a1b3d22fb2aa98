package statefulset

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The planner is upstream's updateStatefulSet (stateful_set_control.go) as a pure function
// of the cached set, its two revisions and its pods: it returns the writes of one sync,
// grouped in the phases upstream runs them in, and the status to record.
//
//	replicas  (ordinals start..end): delete a Failed/Succeeded pod, create a missing one,
//	          fix a pod's identity labels;
//	condemned (ordinals beyond the range, highest first): delete;
//	rolling   (RollingUpdate only): delete pods of the old revision from the highest
//	          ordinal down to the partition, at most maxUnavailable pods unavailable.
//
// With OrderedReady pod management (monotonic) a phase's ops run one at a time in order, and
// the plan ends where upstream's loop would block: at a create, at a pod not yet Running,
// Ready and available, at a terminating pod, at a scale-down step. With Parallel pod
// management a phase's ops run in slow-start batches and only a failure ends the sync.

// opKind is what an op does to its pod.
type opKind string

const (
	opCreate   opKind = "create"
	opDelete   opKind = "delete"
	opIdentity opKind = "update" // fix the identity labels of an existing pod
)

// op is one write to one pod.
type op struct {
	kind opKind
	pod  *corev1.Pod
}

// phaseName names a phase in logs and tests.
type phaseName string

const (
	phaseReplicas  phaseName = "replicas"
	phaseCondemned phaseName = "condemned"
	phaseRolling   phaseName = "rolling"
)

type phase struct {
	name phaseName
	ops  []op
}

// claimBlock is a missing pod that cannot be created because the set has
// volumeClaimTemplates and berth serves no PersistentVolumeClaims yet.
type claimBlock struct {
	pod, claim string
}

// plan is one sync's writes.
type plan struct {
	// ordered: each phase's ops run one at a time, and the first failure ends the sync;
	// otherwise in slow-start batches.
	ordered bool
	// phases run in order; a failed op ends the sync after its phase (its batch).
	phases []phase
	// claims, when set, is the pod that waits for its claim: the sync records the failed
	// claim creation and creates no pod.
	claims *claimBlock
	// status is the status to record, before rolling deletions: each successful one
	// lowers currentReplicas by one, as upstream.
	status appsv1.StatefulSetStatus
}

// ClaimsUnsupported is the error of a claim creation: berth serves the PersistentVolumeClaim
// API, but nothing binds a claim to a volume or mounts it in a pod yet, so a set's pods would
// wait on their claims for ever.
const ClaimsUnsupported = "persistent volumes are not bound or mounted by this cluster yet"

// ReplicaFailure is the condition of a set whose pods cannot be created, with reason
// FailedCreate, as a ReplicaSet's.
const ReplicaFailure appsv1.StatefulSetConditionType = "ReplicaFailure"

// planInput is what the planner reads.
type planInput struct {
	set                     *appsv1.StatefulSet
	currentSet, updateSet   *appsv1.StatefulSet // set at the current and update revisions
	currentRevision, update string
	collisionCount          int32
	pods                    []*corev1.Pod
	now                     time.Time
}

// planSync computes one sync of in.set.
func planSync(in planInput) plan {
	set := in.set
	minReady := set.Spec.MinReadySeconds
	p := plan{ordered: !allowsBurst(set)}

	status := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    in.currentRevision,
		UpdateRevision:     in.update,
		CollisionCount:     &in.collisionCount,
		Conditions:         append([]appsv1.StatefulSetCondition(nil), set.Status.Conditions...),
	}
	countReplicas(&status, minReady, in.currentRevision, in.update, in.now, in.pods)

	// Pods in the ordinal range by ordinal, placeholders for the missing; the rest is
	// condemned, highest ordinal first. A pod whose name has no ordinal is ignored.
	start := startOrdinal(set)
	replicaPods := make([]*corev1.Pod, replicas(set))
	var condemned []*corev1.Pod
	for _, pod := range in.pods {
		switch {
		case inOrdinalRange(pod, set):
			replicaPods[ordinalOf(pod)-start] = pod
		case ordinalOf(pod) >= 0:
			condemned = append(condemned, pod)
		}
	}
	var missing *corev1.Pod
	for i := range replicaPods {
		if replicaPods[i] == nil {
			replicaPods[i] = newVersionedPod(in.currentSet, in.updateSet, in.currentRevision, in.update, start+i)
			if missing == nil {
				missing = replicaPods[i]
			}
		}
	}
	sort.SliceStable(condemned, func(i, j int) bool { return ordinalOf(condemned[i]) > ordinalOf(condemned[j]) })

	if set.DeletionTimestamp != nil {
		// A set being deleted only reports; the garbage collector removes its pods.
		p.status = status
		return p
	}

	var block *claimBlock
	if missing != nil && len(set.Spec.VolumeClaimTemplates) > 0 {
		block = &claimBlock{pod: missing.Name, claim: claimName(set, &set.Spec.VolumeClaimTemplates[0], ordinalOf(missing))}
		setCondition(&status, ReplicaFailure, corev1.ConditionTrue, "FailedCreate", claimFailedMessage(set, block), in.now)
	} else {
		removeCondition(&status, ReplicaFailure)
	}
	countReplicas(&status, minReady, in.currentRevision, in.update, in.now, replicaPods, condemned)
	p.status = status

	// The first unavailable pod: the lowest in range, else the lowest condemned. A
	// monotonic scale-down may delete it even though it is not ready.
	var firstUnavailable *corev1.Pod
	for _, pod := range replicaPods {
		if isUnavailable(pod, minReady, in.now) {
			firstUnavailable = pod
			break
		}
	}
	for i := len(condemned) - 1; i >= 0 && firstUnavailable == nil; i-- {
		if isUnavailable(condemned[i], minReady, in.now) {
			firstUnavailable = condemned[i]
		}
	}

	ops, stop := planReplicas(set, replicaPods, block, p.ordered, in.now)
	p.phases = append(p.phases, phase{name: phaseReplicas, ops: ops})
	if stop {
		p.claims = block
		return p
	}
	ops, stop = planCondemned(set, condemned, firstUnavailable, p.ordered, in.now)
	p.phases = append(p.phases, phase{name: phaseCondemned, ops: ops})
	if stop || set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return p
	}
	p.phases = append(p.phases, phase{name: phaseRolling, ops: planRolling(set, replicaPods, in.update, in.now)})
	return p
}

// planReplicas is upstream's processReplica over the pods in range; stop reports that the
// sync ends after this phase.
func planReplicas(set *appsv1.StatefulSet, pods []*corev1.Pod, block *claimBlock, ordered bool, now time.Time) (ops []op, stop bool) {
	minReady := set.Spec.MinReadySeconds
	for _, pod := range pods {
		switch {
		case isTerminal(pod):
			// Recreated on a later sync, once the API server has removed it.
			if !isTerminating(pod) {
				ops = append(ops, op{kind: opDelete, pod: pod})
			}
			if ordered {
				return ops, true
			}
			continue
		case !isCreated(pod) && block != nil:
			// The create would fail on its claim: upstream's create error ends the sync.
			if ordered {
				return ops, true
			}
			stop = true
			continue
		case !isCreated(pod):
			ops = append(ops, op{kind: opCreate, pod: pod})
			if ordered {
				return ops, true
			}
			continue
		case ordered && (isTerminating(pod) || !isRunningAndReady(pod) || !isAvailable(pod, minReady, now)):
			// Each pod waits for its predecessors to be Running, Ready and available.
			return ops, true
		}
		if !identityMatches(set, pod) {
			ops = append(ops, op{kind: opIdentity, pod: pod})
		}
	}
	return ops, stop
}

// planCondemned is upstream's processCondemned over the pods beyond the range, highest
// ordinal first: monotonic, one pod at a time, and only once it (or, if it is the first
// unavailable pod, regardless) is Running, Ready and available.
func planCondemned(set *appsv1.StatefulSet, condemned []*corev1.Pod, firstUnavailable *corev1.Pod, ordered bool, now time.Time) (ops []op, stop bool) {
	minReady := set.Spec.MinReadySeconds
	for _, pod := range condemned {
		if isTerminating(pod) {
			if ordered {
				return ops, true
			}
			continue
		}
		if ordered && pod != firstUnavailable && (!isRunningAndReady(pod) || !isAvailable(pod, minReady, now)) {
			return ops, true
		}
		ops = append(ops, op{kind: opDelete, pod: pod})
		if ordered {
			return ops, true
		}
	}
	return ops, false
}

// planRolling is upstream's updateStatefulSetAfterInvariantEstablished (MaxUnavailableStatefulSet,
// on by default): delete old-revision pods from the highest ordinal down to the partition,
// keeping at most maxUnavailable pods unavailable. Parallel sets first delete the old pods
// that are unavailable anyway, then spend what is left of the budget.
func planRolling(set *appsv1.StatefulSet, pods []*corev1.Pod, update string, now time.Time) []op {
	minReady := set.Spec.MinReadySeconds
	partition := 0
	maxUnavailable := 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		maxUnavailable = statefulSetMaxUnavailable(ru.MaxUnavailable, replicas(set))
	}
	parallel := set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	old := func(pod *corev1.Pod) bool { return revisionOf(pod) != update && isCreated(pod) }

	unavailable, unavailableOld := 0, 0
	for _, pod := range pods {
		if isUnavailable(pod, minReady, now) {
			unavailable++
			if parallel && old(pod) && !isTerminating(pod) {
				unavailableOld++
			}
		}
	}
	if unavailable >= maxUnavailable && unavailableOld == 0 {
		return nil
	}

	var ops []op
	if parallel {
		for i := len(pods) - 1; i >= partition; i-- {
			if pod := pods[i]; old(pod) && !isAvailable(pod, minReady, now) && !isTerminating(pod) {
				ops = append(ops, op{kind: opDelete, pod: pod})
			}
		}
		budget := maxUnavailable - unavailable
		for i := len(pods) - 1; i >= partition && budget > 0; i-- {
			// Available pods: none of those deleted above.
			if pod := pods[i]; old(pod) && !isUnavailable(pod, minReady, now) {
				ops = append(ops, op{kind: opDelete, pod: pod})
				budget--
			}
		}
		return ops
	}
	budget := maxUnavailable - unavailable
	for i := len(pods) - 1; i >= partition && len(ops) < budget; i-- {
		if pod := pods[i]; old(pod) && !isTerminating(pod) {
			ops = append(ops, op{kind: opDelete, pod: pod})
		}
	}
	return ops
}

// statefulSetMaxUnavailable is maxUnavailable (default 1) of replicas, a percentage rounded
// down, and at least 1.
func statefulSetMaxUnavailable(maxUnavailable *intstr.IntOrString, replicas int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, intstr.FromInt32(1)), replicas, false)
	if err != nil || n < 1 {
		// Validation refuses anything else; an unreadable value rolls one pod at a time.
		return 1
	}
	return n
}

// countReplicas sets status's pod counts from podLists (upstream's updateStatus).
func countReplicas(status *appsv1.StatefulSetStatus, minReady int32, current, update string, now time.Time, podLists ...[]*corev1.Pod) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0
	status.CurrentReplicas, status.UpdatedReplicas = 0, 0
	for _, pods := range podLists {
		for _, pod := range pods {
			if isCreated(pod) {
				status.Replicas++
			}
			if isRunningAndReady(pod) {
				status.ReadyReplicas++
				if isAvailable(pod, minReady, now) {
					status.AvailableReplicas++
				}
			}
			if isCreated(pod) && !isTerminating(pod) {
				if revisionOf(pod) == current {
					status.CurrentReplicas++
				}
				if revisionOf(pod) == update {
					status.UpdatedReplicas++
				}
			}
		}
	}
}

// completeUpdate ends a rollout once every replica is updated and ready: the update revision
// becomes the current one.
func completeUpdate(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) {
	n := int32(replicas(set))
	if status.UpdatedReplicas == n && status.ReadyReplicas == n && status.Replicas == n {
		status.CurrentReplicas = status.UpdatedReplicas
		status.CurrentRevision = status.UpdateRevision
	}
}

// claimFailedMessage is upstream's Warning on a claim that could not be created.
func claimFailedMessage(set *appsv1.StatefulSet, b *claimBlock) string {
	return fmt.Sprintf("Create Claim %s for Pod %s in StatefulSet %s failed error: %s", b.claim, b.pod, set.Name, ClaimsUnsupported)
}

// setCondition sets status's condition of type t, keeping its transition time when its
// status does not change (upstream's setStatefulSetCondition).
func setCondition(status *appsv1.StatefulSetStatus, t appsv1.StatefulSetConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = s, reason, message
		return
	}
	status.Conditions = append(status.Conditions, appsv1.StatefulSetCondition{
		Type: t, Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now),
	})
}

func removeCondition(status *appsv1.StatefulSetStatus, t appsv1.StatefulSetConditionType) {
	kept := status.Conditions[:0]
	for _, c := range status.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	status.Conditions = kept
}
