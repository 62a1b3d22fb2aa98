package daemonset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/history"
)

// A DaemonSet's revisions are upstream's: ControllerRevisions "<ds>-<hash>" whose hash is
// that of the pod template (ComputeHash), labelled controller-revision-hash=<hash>, holding
// a patch that replaces spec.template. The newest revision holding the DaemonSet's template
// is the current one; the others are old, kept up to revisionHistoryLimit while no pod runs
// them.

// templatePatch is upstream's getPatch of a DaemonSet: {"spec":{"template":{...,"$patch":"replace"}}}.
func templatePatch(ds *appsv1.DaemonSet) ([]byte, error) {
	data, err := json.Marshal(ds)
	if err != nil {
		return nil, fmt.Errorf("encoding DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	spec, _ := raw["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		template = map[string]any{}
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// constructHistory claims ds's revisions and returns the current one (creating it, or
// renumbering it as the newest) and the old ones (upstream's constructHistory).
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, err error) {
	all, err := c.history.List(ds, controllerKind, labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	revisions, err := c.history.Claim(ctx, controllerref.Owner{Object: ds, Kind: controllerKind, Selector: selector, CanAdopt: c.canAdopt(ds)}, all)
	if err != nil {
		return nil, nil, err
	}
	patch, err := templatePatch(ds)
	if err != nil {
		return nil, nil, err
	}
	client := c.client.AppsV1().ControllerRevisions(ds.Namespace)
	var current []*appsv1.ControllerRevision
	for _, r := range revisions {
		// Revisions from before the hash label carry their name as their hash.
		if _, ok := r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; !ok {
			r = r.DeepCopy()
			if r.Labels == nil {
				r.Labels = map[string]string{}
			}
			r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = r.Name
			if r, err = client.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
				return nil, nil, fmt.Errorf("labelling ControllerRevision %s/%s: %w", ds.Namespace, r.Name, err)
			}
		}
		if bytes.Equal(patch, r.Data.Raw) {
			current = append(current, r)
		} else {
			old = append(old, r)
		}
	}
	next := maxRevision(old) + 1
	if len(current) == 0 {
		cur, err = c.snapshot(ctx, ds, patch, next)
		return cur, old, err
	}
	if cur, err = c.dedup(ctx, ds, selector, current); err != nil {
		return nil, nil, err
	}
	if cur.Revision < next {
		renumbered := cur.DeepCopy()
		renumbered.Revision = next
		if _, err := client.Update(ctx, renumbered, metav1.UpdateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("renumbering ControllerRevision %s/%s: %w", ds.Namespace, cur.Name, err)
		}
	}
	return cur, old, nil
}

func maxRevision(revisions []*appsv1.ControllerRevision) int64 {
	var m int64
	for _, r := range revisions {
		m = max(m, r.Revision)
	}
	return m
}

// snapshot stores the revision of ds's template. A revision of the same name with other data
// is a hash collision: ds's status.collisionCount is raised and the sync fails, to be
// retried with the new count, as upstream.
func (c *Controller) snapshot(ctx context.Context, ds *appsv1.DaemonSet, patch []byte, revision int64) (*appsv1.ControllerRevision, error) {
	hash := history.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	lbls := make(map[string]string, len(ds.Spec.Template.Labels)+1)
	for k, v := range ds.Spec.Template.Labels {
		lbls[k] = v
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + hash, Namespace: ds.Namespace, Labels: lbls, Annotations: ds.Annotations,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}
	created, err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, cr, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return nil, fmt.Errorf("creating ControllerRevision %s/%s: %w", ds.Namespace, cr.Name, err)
		}
		return created, nil
	}
	existing, getErr := c.client.AppsV1().ControllerRevisions(ds.Namespace).Get(ctx, cr.Name, metav1.GetOptions{})
	if getErr != nil {
		return nil, getErr
	}
	if bytes.Equal(existing.Data.Raw, patch) {
		return existing, nil
	}
	fresh, getErr := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if getErr != nil {
		return nil, getErr
	}
	if !reflect.DeepEqual(fresh.Status.CollisionCount, ds.Status.CollisionCount) {
		return nil, fmt.Errorf("found a stale collision count (%v, expected %v) of DaemonSet %q while processing; will retry until it is updated",
			ds.Status.CollisionCount, fresh.Status.CollisionCount, ds.Name)
	}
	if fresh.Status.CollisionCount == nil {
		fresh.Status.CollisionCount = new(int32)
	}
	*fresh.Status.CollisionCount++
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Found a hash collision for DaemonSet - bumping collisionCount to resolve it",
		"daemonset", klog.KObj(ds), "collisionCount", *fresh.Status.CollisionCount)
	return nil, err
}

// dedup keeps the newest of several revisions holding ds's template: the pods of the others
// are relabelled with its hash and the others deleted (upstream's dedupCurHistories).
func (c *Controller) dedup(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, current []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if len(current) == 1 {
		return current[0], nil
	}
	keep := current[0]
	for _, r := range current {
		if r.Revision >= keep.Revision {
			keep = r
		}
	}
	hash := keep.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return nil, err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash}}})
	for _, pod := range pods {
		if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
			continue
		}
		if _, err := c.client.CoreV1().Pods(ds.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("relabelling pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	for _, r := range current {
		if r.Name != keep.Name {
			if err := c.history.Delete(ctx, r); err != nil {
				return nil, err
			}
		}
	}
	return keep, nil
}

// revisionsToClean are the old revisions beyond revisionHistoryLimit that no pod runs, oldest
// first (upstream's cleanupHistory). pods include terminal ones.
func revisionsToClean(ds *appsv1.DaemonSet, pods []*corev1.Pod, old []*appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	live := map[string]bool{}
	for _, pod := range pods {
		if h := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			live[h] = true
		}
	}
	sorted := append([]*appsv1.ControllerRevision(nil), old...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Revision < sorted[j].Revision })
	var out []*appsv1.ControllerRevision
	for _, r := range sorted {
		if toKill <= 0 {
			break
		}
		if live[r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		out = append(out, r)
		toKill--
	}
	return out
}
