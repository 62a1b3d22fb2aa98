package deployment

import (
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The annotations a deployment keeps on its ReplicaSets (and the revision on itself), as
// upstream names them.
const (
	// RevisionAnnotation is a ReplicaSet's place in its deployment's rollouts (and, on the
	// deployment, that of its current ReplicaSet): what `kubectl rollout history` lists and
	// `kubectl rollout undo --to-revision` picks.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions a ReplicaSet served, comma
	// separated, when a rollback made it current again.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the deployment's replicas when the ReplicaSet was last
	// sized: a differing value tells a scaling event from a rollout step.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is the deployment's replicas plus its max surge then: the base of
	// the ReplicaSets' proportions when the deployment is scaled during a rollout.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
)

// maxRevisionHistoryChars caps the revision-history annotation (about 100 revisions).
const maxRevisionHistoryChars = 2000

// notCopied are the deployment annotations that are not copied to its ReplicaSets (and not
// copied back on a rollback): kubectl apply's record, and the controller's own.
var notCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	RevisionAnnotation:                 true,
	RevisionHistoryAnnotation:          true,
	DesiredReplicasAnnotation:          true,
	MaxReplicasAnnotation:              true,
	appsv1.DeprecatedRollbackTo:        true,
}

// revision is obj's revision annotation; 0 when it has none, an error when it is not a number.
func revision(annotations map[string]string) (int64, error) {
	v, ok := annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest revision among rss; those whose revision does not parse are
// skipped.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range rss {
		if v, err := revision(rs.Annotations); err == nil && v > highest {
			highest = v
		}
	}
	return highest
}

// lastRevision is the second highest revision among rss: the one `rollout undo` goes back to.
func lastRevision(rss []*appsv1.ReplicaSet) int64 {
	var highest, second int64
	for _, rs := range rss {
		v, err := revision(rs.Annotations)
		switch {
		case err != nil:
		case v >= highest:
			highest, second = v, highest
		case v > second:
			second = v
		}
	}
	return second
}

// setNewReplicaSetAnnotations brings the annotations of d's new ReplicaSet rs up to date and
// reports whether any changed: d's own annotations copied (but for notCopied); the revision
// raised to newRevision if it is lower, the revision it had appended to its history (a
// ReplicaSet made current again by a rollback keeps the revisions it served); and, for a
// ReplicaSet being created, the replicas annotations. upstream's SetNewReplicaSetAnnotations.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64, exists bool) bool {
	changed := copyDeploymentAnnotations(d, rs)
	old, had := rs.Annotations[RevisionAnnotation]
	oldRevision, err := strconv.ParseInt(old, 10, 64)
	if err != nil {
		if old != "" {
			return false // not ours to fix: leave the ReplicaSet as it is, as upstream
		}
		oldRevision = 0
	}
	if oldRevision < newRevision {
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if had {
			if history, ok := appendRevisionHistory(rs.Annotations[RevisionHistoryAnnotation], old, maxRevisionHistoryChars); ok {
				rs.Annotations[RevisionHistoryAnnotation] = history
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory appends old to the comma-separated history, dropping the oldest
// entries to stay within limit characters; false when old alone does not fit.
func appendRevisionHistory(history, old string, limit int) (string, bool) {
	if history == "" {
		return old, true
	}
	entries := strings.Split(history, ",")
	total := len(history) + len(old) + 1
	start := 0
	for total > limit && start < len(entries) {
		total -= len(entries[start]) + 1
		start++
	}
	if total > limit {
		return "", false
	}
	return strings.Join(append(entries[start:], old), ","), true
}

// copyDeploymentAnnotations copies d's annotations but for notCopied to rs, reporting
// whether any changed. The revision is never copied: the new ReplicaSet's is the source of
// truth, the deployment's a copy whose update may have failed.
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if cur, ok := rs.Annotations[k]; notCopied[k] || (ok && cur == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setDeploymentAnnotationsFrom replaces d's annotations with rs's (but for notCopied, which
// d keeps): a rollback to rs brings back the change-cause and such of its revision.
func setDeploymentAnnotationsFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	kept := map[string]string{}
	for k, v := range d.Annotations {
		if notCopied[k] {
			kept[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !notCopied[k] {
			kept[k] = v
		}
	}
	d.Annotations = kept
}

// setDeploymentRevision sets d's revision annotation, reporting whether it changed.
func setDeploymentRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == revision {
		return false
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// setReplicasAnnotations sets rs's desired-replicas and max-replicas annotations, reporting
// whether either changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false
	}
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(desired))
	rs.Annotations[MaxReplicasAnnotation] = strconv.Itoa(int(maxReplicas))
	return true
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

// replicasAnnotation is a non-negative int32 annotation of rs; false when absent or not one.
func replicasAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

// rollbackTo is the revision the deprecated rollback annotation (extensions/v1beta1's
// spec.rollbackTo, kept by conversion) asks for; nil when absent or not a number.
func rollbackTo(d *appsv1.Deployment) *int64 {
	v := d.Annotations[appsv1.DeprecatedRollbackTo]
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}
