package deployment

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/integer"
)

// This file is the arithmetic of a rollout: how many pods a deployment may surge above, or
// drop below, its replicas; how far its new ReplicaSet may grow; how a scaling event is
// shared among the ReplicaSets of a rollout in flight. All of it is pure.

// resolveFenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded down) against
// desired replicas in one step: when both come to zero (validation forbids explicit zeros, but
// a small percentage rounds down), maxUnavailable is 1, on the theory that a surge may be
// refused by quota. Upstream's ResolveFenceposts.
func resolveFenceposts(surge, unavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(surge, intstr.FromInt32(0)), int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(unavailable, intstr.FromInt32(0)), int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

// isRollingUpdate reports whether d rolls out with the RollingUpdate strategy.
func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// rollingParams are d's maxSurge and maxUnavailable as written (nil when the strategy has none).
func rollingParams(d *appsv1.Deployment) (surge, unavailable *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	return nil, nil
}

// maxSurge is how many pods a rolling d may run above its replicas; 0 for Recreate. A
// value validation would refuse counts as 0.
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _, _ := resolveFenceposts(s, u, *d.Spec.Replicas)
	return surge
}

// maxUnavailable is how many of its replicas a rolling d may lack, at most its replicas; 0
// for Recreate and for a deployment scaled to zero.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || *d.Spec.Replicas == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable, _ := resolveFenceposts(s, u, *d.Spec.Replicas)
	return min(unavailable, *d.Spec.Replicas)
}

// newRSNewReplicas is the size d's new ReplicaSet should grow to now: for RollingUpdate, as
// far as the surge allows without passing d's replicas; for Recreate, d's replicas (the old
// pods are gone by then).
func newRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		s, _ := rollingParams(d)
		surge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(s, intstr.FromInt32(0)), int(*d.Spec.Replicas), true)
		if err != nil {
			return 0, err
		}
		current := totalReplicas(allRSs)
		maxTotal := *d.Spec.Replicas + int32(surge)
		if current >= maxTotal {
			return *newRS.Spec.Replicas, nil // cannot scale up
		}
		up := min(maxTotal-current, *d.Spec.Replicas-*newRS.Spec.Replicas)
		return *newRS.Spec.Replicas + up, nil
	case appsv1.RecreateDeploymentStrategyType:
		return *d.Spec.Replicas, nil
	default:
		return 0, fmt.Errorf("deployment type %v isn't supported", d.Spec.Strategy.Type)
	}
}

// isSaturated reports whether rs holds all of d's replicas, available, and was sized for
// d's current replicas.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := replicasAnnotation(rs, DesiredReplicasAnnotation)
	return ok && *rs.Spec.Replicas == *d.Spec.Replicas && desired == *d.Spec.Replicas &&
		rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// findActiveOrLatest is the ReplicaSet a scaling event resizes alone: the only one with
// replicas, or, when none has any, the new one (else the newest old one); nil when several
// have replicas and the event must be shared among them. It sorts oldRSs newest first.
func findActiveOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	slices.SortFunc(oldRSs, func(a, b *appsv1.ReplicaSet) int { return byCreation(b, a) })
	active := filterActive(append(slices.Clip(oldRSs), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return active[0]
	default:
		return nil
	}
}

// proportionalSizes is how a scaling event during a rollout (or of a paused deployment) is
// shared: the active ReplicaSets together may hold d's replicas plus its surge, and each
// grows or shrinks in proportion to its size against the max-replicas it was last sized for,
// the largest first (newest first among equals when growing, oldest first when shrinking),
// the largest taking what rounding leaves over. It returns the active ReplicaSets in that
// order with their new sizes. Upstream's scale and GetReplicaSetProportion.
func proportionalSizes(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, []int32) {
	active := filterActive(append(slices.Clip(oldRSs), newRS))
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - totalReplicas(active)
	switch {
	case toAdd > 0:
		slices.SortFunc(active, func(a, b *appsv1.ReplicaSet) int {
			return cmp.Or(cmp.Compare(*b.Spec.Replicas, *a.Spec.Replicas), byCreation(b, a))
		})
	case toAdd < 0:
		slices.SortFunc(active, func(a, b *appsv1.ReplicaSet) int {
			return cmp.Or(cmp.Compare(*b.Spec.Replicas, *a.Spec.Replicas), byCreation(a, b))
		})
	}
	sizes := make([]int32, len(active))
	added := int32(0)
	for i, rs := range active {
		sizes[i] = *rs.Spec.Replicas
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	if len(active) > 0 && toAdd != 0 {
		sizes[0] = max(sizes[0]+toAdd-added, 0)
	}
	return active, sizes
}

// proportion is rs's share of toAdd replicas (negative: to remove) of which added are
// already given out, never past what is left.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || *rs.Spec.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := fraction(rs, d)
	left := toAdd - added
	if toAdd > 0 {
		return min(fraction, left)
	}
	return max(fraction, left)
}

// fraction is how rs's size changes when d's max replicas go from what rs's max-replicas
// annotation says (d's status replicas when it has none) to their value now, rounded.
func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if *d.Spec.Replicas == 0 {
		return -*rs.Spec.Replicas
	}
	maxNow := *d.Spec.Replicas + maxSurge(d)
	maxBefore, ok := replicasAnnotation(rs, MaxReplicasAnnotation)
	if !ok || maxBefore == 0 {
		// Someone tampered with the annotation: the status replicas are a rough base, and
		// the min/max in proportion keep the result within bounds.
		maxBefore = d.Status.Replicas
		if maxBefore == 0 {
			return 0
		}
	}
	size := float64(*rs.Spec.Replicas*maxNow) / float64(maxBefore)
	return integer.RoundToInt32(size) - *rs.Spec.Replicas
}

// byCreation orders ReplicaSets oldest first, by name among equals.
func byCreation(a, b *appsv1.ReplicaSet) int {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return cmp.Compare(a.Name, b.Name)
	}
	if a.CreationTimestamp.Before(&b.CreationTimestamp) {
		return -1
	}
	return 1
}

// byRevision orders ReplicaSets lowest revision first, by creation among equals or when a
// revision does not parse.
func byRevision(a, b *appsv1.ReplicaSet) int {
	ra, errA := revision(a.Annotations)
	rb, errB := revision(b.Annotations)
	if errA != nil || errB != nil || ra == rb {
		return byCreation(a, b)
	}
	return cmp.Compare(ra, rb)
}

// filterActive is those of rss (nil ones skipped) that have replicas.
func filterActive(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// totalReplicas sums the spec replicas of rss, nil ones skipped.
func totalReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumOf(rss, func(rs *appsv1.ReplicaSet) int32 { return *rs.Spec.Replicas })
}

// sumOf sums f over rss, nil ones skipped.
func sumOf(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs)
		}
	}
	return n
}

// findNewReplicaSet is the ReplicaSet whose template is d's (the oldest, should several be),
// or nil. It sorts rss oldest first.
func findNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	slices.SortFunc(rss, byCreation)
	for _, rs := range rss {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets is every ReplicaSet of rss but the new one.
func findOldReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := findNewReplicaSet(d, rss)
	var old []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}

// hasProgressDeadline reports whether d reports ProgressDeadlineExceeded at all
// (progressDeadlineSeconds set and not MaxInt32).
func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// hasRevisionHistoryLimit reports whether d's old ReplicaSets are cleaned up at all.
func hasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}
