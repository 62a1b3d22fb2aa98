package resourcequota

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/discovery"
)

// planStatus is the status a sync gives q, and whether it differs from the stored one so
// that it must be written. counted is the usage just counted for the resources that could
// be counted: those overwrite the stored usage, the others keep their last count (an
// evaluator whose list failed leaves its resources as they were). status.hard becomes
// spec.hard, and status.used keeps only resources that have a hard limit.
func planStatus(q *corev1.ResourceQuota, counted corev1.ResourceList) (corev1.ResourceQuotaStatus, bool) {
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	for name, value := range counted {
		used[name] = value
	}
	used = quota.Mask(used, quota.ResourceNames(hard))
	write := !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) ||
		q.Status.Hard == nil || q.Status.Used == nil ||
		!quota.Equals(used, q.Status.Used)
	return corev1.ResourceQuotaStatus{Hard: hard, Used: used}, write
}

// missingUsage reports whether q should jump the queue: its status does not yet carry its
// spec's limits, or lacks the usage of a limited resource that an evaluator can count
// (matching picks the countable ones of a list of names). Those are the quotas admission
// cannot yet enforce, or enforces on a stale count.
func missingUsage(q *corev1.ResourceQuota, matching func([]corev1.ResourceName) []corev1.ResourceName) bool {
	if !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
		return true
	}
	for name := range q.Status.Hard {
		if _, ok := q.Status.Used[name]; !ok && len(matching([]corev1.ResourceName{name})) > 0 {
			return true
		}
	}
	return false
}

// toReplenish picks, of a namespace's quotas, those that limit a resource the evaluator
// (through its matching) counts: a change to one of its objects may change their usage.
func toReplenish(quotas []*corev1.ResourceQuota, matching func([]corev1.ResourceName) []corev1.ResourceName) []*corev1.ResourceQuota {
	var out []*corev1.ResourceQuota
	for _, q := range quotas {
		if len(matching(quota.ResourceNames(q.Status.Hard))) > 0 {
			out = append(out, q)
		}
	}
	return out
}

// quotableResources are, of what discovery lists, the resources quota counts: namespaced
// ones that can be created, listed, watched and deleted, less the ignored ones; always the
// resources berth's evaluators read, in case discovery missed them. Sorted, so that the
// controller's set-up reads the same each time.
func quotableResources(lists []*metav1.APIResourceList, ignored map[schema.GroupResource]struct{}, always []schema.GroupVersionResource) []schema.GroupVersionResource {
	found := sets.New(always...)
	filtered := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"create", "list", "watch", "delete"}}, lists)
	for _, list := range filtered {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue // not a group/version: nothing berth could watch
		}
		for _, r := range list.APIResources {
			if r.Namespaced {
				found.Insert(gv.WithResource(r.Name))
			}
		}
	}
	for gvr := range found {
		if _, skip := ignored[gvr.GroupResource()]; skip {
			found.Delete(gvr)
		}
	}
	return sortedResources(found)
}

// monitorChanges is what a discovery changes of the watched resources: the resources to
// start watching (found, not running) and to stop watching (running, no longer found).
// found are the quotable resources discovery reported; failed are the group versions it
// could not list this time (a partial failure), whose running monitors are kept rather than
// taken for gone. Both lists are sorted.
func monitorChanges(running, found []schema.GroupVersionResource, failed map[schema.GroupVersion]error) (start, stop []schema.GroupVersionResource) {
	want := sets.New(found...)
	have := sets.New(running...)
	for gvr := range have {
		if _, isFailed := failed[gvr.GroupVersion()]; isFailed {
			want.Insert(gvr)
		}
	}
	return sortedResources(want.Difference(have)), sortedResources(have.Difference(want))
}

// sortedResources are set's resources, by group, resource and version.
func sortedResources(set sets.Set[schema.GroupVersionResource]) []schema.GroupVersionResource {
	out := set.UnsortedList()
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Resource, b.Resource), strings.Compare(a.Version, b.Version))
	})
	return out
}
