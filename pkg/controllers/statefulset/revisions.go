package statefulset

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/berth-cluster/berth/pkg/controllers/history"
)

// A StatefulSet's revisions are ControllerRevisions holding a strategic merge patch that
// replaces spec.template, as upstream's, so that their names (hashes of that patch) are the
// ones kube-controller-manager gives: a set moved between the two keeps its pods' revisions.

// patchCodec encodes a set as apps/v1 JSON, as upstream's revisions are encoded.
var patchCodec = scheme.Codecs.LegacyCodec(appsv1.SchemeGroupVersion)

// templatePatch is the revision data of set: {"spec":{"template":{...,"$patch":"replace"}}}.
func templatePatch(set *appsv1.StatefulSet) ([]byte, error) {
	data, err := runtime.Encode(patchCodec, set)
	if err != nil {
		return nil, fmt.Errorf("encoding StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decoding StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	spec, _ := raw["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		template = map[string]any{}
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// newRevision is the revision numbered revision of set's current template, carrying set's
// annotations, as upstream's.
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	patch, err := templatePatch(set)
	if err != nil {
		return nil, err
	}
	cr := history.New(set, controllerKind, set.Spec.Template.Labels, runtime.RawExtension{Raw: patch}, revision, collisionCount)
	cr.Annotations = make(map[string]string, len(set.Annotations))
	for k, v := range set.Annotations {
		cr.Annotations[k] = v
	}
	return cr, nil
}

// applyRevision is set with the spec revision restores (its template).
func applyRevision(set *appsv1.StatefulSet, revision *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	clone := set.DeepCopy()
	original, err := runtime.Encode(patchCodec, clone)
	if err != nil {
		return nil, fmt.Errorf("encoding StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	patched, err := strategicpatch.StrategicMergePatch(original, revision.Data.Raw, clone)
	if err != nil {
		return nil, fmt.Errorf("applying ControllerRevision %s to StatefulSet %s/%s: %w", revision.Name, set.Namespace, set.Name, err)
	}
	restored := &appsv1.StatefulSet{}
	if err := json.Unmarshal(patched, restored); err != nil {
		return nil, fmt.Errorf("decoding StatefulSet %s/%s at ControllerRevision %s: %w", set.Namespace, set.Name, revision.Name, err)
	}
	clone.Spec = restored.Spec
	return clone, nil
}

// revisionWrites is what the history needs so that set's template has an update revision.
type revisionWrites interface {
	Create(ctx context.Context, parent metav1.Object, revision *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error)
	Renumber(ctx context.Context, revision *appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error)
}

// chooseRevisions returns set's current and update revisions and its collision count, given
// its sorted revisions (upstream's getStatefulSetRevisions). The update revision is the last
// revision if it holds set's template, else an older one holding it renumbered as the newest
// (a rollback), else a new one. The current revision is the one status.currentRevision
// names, else the update revision (a new set).
func chooseRevisions(ctx context.Context, w revisionWrites, set *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisionCount int32, err error) {
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	update, err = newRevision(set, history.Next(revisions), &collisionCount)
	if err != nil {
		return nil, nil, collisionCount, err
	}
	equal := history.FindEqual(revisions, update)
	n := len(revisions)
	switch {
	case len(equal) > 0 && history.Equal(revisions[n-1], equal[len(equal)-1]):
		update = revisions[n-1]
	case len(equal) > 0:
		update, err = w.Renumber(ctx, equal[len(equal)-1], update.Revision)
	case n > 0 && matchesLatest(set, update, revisions[n-1]):
		update = revisions[n-1]
	default:
		update, err = w.Create(ctx, set, update, &collisionCount)
	}
	if err != nil {
		return nil, nil, collisionCount, err
	}
	for _, r := range revisions {
		if r.Name == set.Status.CurrentRevision {
			current = r
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisionCount, nil
}

// matchesLatest reports whether restoring latest onto set gives proposed's data: a revision
// written by another serializer (an older kube-controller-manager) that holds the same
// template in other bytes (upstream's StatefulSetSemanticRevisionComparison, on by default).
// berth's API server has already defaulted set, so the restored set needs no defaulting.
func matchesLatest(set *appsv1.StatefulSet, proposed, latest *appsv1.ControllerRevision) bool {
	restored, err := applyRevision(set, latest)
	if err != nil {
		return false
	}
	reconstructed, err := newRevision(restored, -1, nil)
	if err != nil {
		return false
	}
	return history.Equal(proposed, reconstructed)
}

// revisionsToTruncate are the revisions beyond spec.revisionHistoryLimit to delete, oldest
// first: every revision but the current and update ones and those pods still run counts
// toward the limit (upstream's truncateHistory). revisions are sorted.
func revisionsToTruncate(set *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, current, update *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	live := map[string]bool{}
	if current != nil {
		live[current.Name] = true
	}
	if update != nil {
		live[update.Name] = true
	}
	for _, p := range pods {
		live[revisionOf(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if limit < 0 || len(old) <= limit {
		return nil
	}
	return old[:len(old)-limit]
}
