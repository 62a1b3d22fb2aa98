package config

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// podStorage is what the node agent has been told of each source's pods: the state of the
// merge. It does no I/O; merge turns one update from a source into the updates to emit.
// Only PodConfig's merge goroutines touch it, one at a time.
type podStorage struct {
	// pods is each source's pods by UID. The pods are the storage's own copies.
	pods  map[string]map[ktypes.UID]*v1.Pod
	clock clock.PassiveClock
}

func newPodStorage(clk clock.PassiveClock) *podStorage {
	return &podStorage{pods: map[string]map[ktypes.UID]*v1.Pod{}, clock: clk}
}

// localAnnotations are the annotations the node agent adds to a pod itself: a change from
// the source never changes them, and they do not count when comparing pods.
var localAnnotations = []string{
	types.ConfigSourceAnnotationKey,
	types.ConfigMirrorAnnotationKey,
	types.ConfigFirstSeenAnnotationKey,
}

// merge applies update u from source and returns the updates to emit, in PodConfig's order,
// and the pods it ignored (a second pod of the same name in one update). firstSet says this
// is the source's first SET. The pods in the returned updates are copies the caller owns.
func (s *podStorage) merge(logger klog.Logger, source string, u types.PodUpdate, firstSet bool) (out []types.PodUpdate, rejected []*v1.Pod) {
	old := s.pods[source]
	if old == nil {
		old = map[ktypes.UID]*v1.Pod{}
	}
	var adds, updates, deletes, removes, reconciles []*v1.Pod

	switch u.Op {
	case types.REMOVE:
		for _, p := range u.Pods {
			if existing, ok := old[p.UID]; ok {
				delete(old, p.UID)
				removes = append(removes, existing)
			}
		}
		s.pods[source] = old

	case types.SET, types.ADD, types.UPDATE, types.DELETE, types.RECONCILE:
		cur := old
		if u.Op == types.SET {
			cur = make(map[ktypes.UID]*v1.Pod, len(u.Pods))
		}
		var pods []*v1.Pod
		pods, rejected = filterDuplicates(logger, u.Pods)
		for _, p := range pods {
			ref := p.DeepCopy()
			if ref.Annotations == nil {
				ref.Annotations = map[string]string{}
			}
			ref.Annotations[types.ConfigSourceAnnotationKey] = source

			existing, found := old[ref.UID]
			if !found {
				ref.Annotations[types.ConfigFirstSeenAnnotationKey] = formatFirstSeen(s.clock.Now())
				cur[ref.UID] = ref
				adds = append(adds, ref)
				continue
			}
			changed, statusChanged := compare(existing, ref)
			keepLocalAnnotations(ref, existing)
			cur[ref.UID] = ref
			switch {
			case changed && ref.DeletionTimestamp != nil:
				deletes = append(deletes, ref)
			case changed:
				updates = append(updates, ref)
			case statusChanged:
				reconciles = append(reconciles, ref)
			}
		}
		if u.Op == types.SET {
			for uid, existing := range old {
				if _, ok := cur[uid]; !ok {
					removes = append(removes, existing)
				}
			}
		}
		s.pods[source] = cur

	default:
		logger.Error(nil, "Ignoring an update with an unknown operation", "op", int(u.Op))
		return nil, nil
	}

	sort.Slice(removes, func(i, j int) bool {
		if removes[i].Namespace != removes[j].Namespace {
			return removes[i].Namespace < removes[j].Namespace
		}
		return removes[i].Name < removes[j].Name
	})
	emit := func(op types.PodOperation, pods []*v1.Pod) {
		if len(pods) > 0 {
			out = append(out, types.PodUpdate{Op: op, Pods: copyPods(pods), Source: source})
		}
	}
	emit(types.REMOVE, removes)
	emit(types.ADD, adds)
	emit(types.UPDATE, updates)
	emit(types.DELETE, deletes)
	if firstSet && len(adds)+len(updates)+len(deletes) == 0 {
		// The syncLoop marks a source as seen when it gets an update from it.
		out = append(out, types.PodUpdate{Op: types.ADD, Pods: []*v1.Pod{}, Source: source})
	}
	emit(types.RECONCILE, reconciles)
	return out, rejected
}

// filterDuplicates drops the pods of an update whose full name (or UID) an earlier pod of
// the same update already has: each source is validated pod by pod, so only the merge can
// see that two manifests name the same pod.
func filterDuplicates(logger klog.Logger, pods []*v1.Pod) (kept, rejected []*v1.Pod) {
	names := sets.New[string]()
	uids := sets.New[ktypes.UID]()
	for _, p := range pods {
		name := types.GetPodFullName(p)
		switch {
		case names.Has(name):
			rejected = append(rejected, p)
		case uids.Has(p.UID):
			logger.Info("Ignoring a second pod with the same UID in one update", "pod", klog.KObj(p), "podUID", p.UID)
		default:
			names.Insert(name)
			uids.Insert(p.UID)
			kept = append(kept, p)
		}
	}
	return kept, rejected
}

// compare says whether ref differs from existing in what the pod workers act on (spec,
// labels, deletion timestamp and grace period, annotations other than local ones), and if
// not, whether only the status differs.
func compare(existing, ref *v1.Pod) (changed, statusChanged bool) {
	eq := apiequality.Semantic.DeepEqual
	if !eq(existing.Spec, ref.Spec) ||
		!eq(existing.Labels, ref.Labels) ||
		!eq(existing.DeletionTimestamp, ref.DeletionTimestamp) ||
		!eq(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) ||
		!annotationsEqual(existing.Annotations, ref.Annotations) {
		return true, false
	}
	return false, !eq(existing.Status, ref.Status)
}

func isLocalAnnotation(key string) bool {
	for _, k := range localAnnotations {
		if k == key {
			return true
		}
	}
	return false
}

// annotationsEqual compares two annotation maps, local annotations left out.
func annotationsEqual(a, b map[string]string) bool {
	count := func(m map[string]string) int {
		n := 0
		for k := range m {
			if !isLocalAnnotation(k) {
				n++
			}
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range a {
		if isLocalAnnotation(k) {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// keepLocalAnnotations carries the node agent's own annotations (when the pod was first
// seen, and so on) from the stored pod over to its new version.
func keepLocalAnnotations(ref, existing *v1.Pod) {
	for _, k := range localAnnotations {
		if v, ok := existing.Annotations[k]; ok {
			ref.Annotations[k] = v
		}
	}
}

func copyPods(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	return out
}
