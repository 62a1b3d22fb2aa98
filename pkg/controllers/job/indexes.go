package job

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

// Indexed completion mode: each pod carries its completion index in the
// batch.kubernetes.io/job-completion-index annotation (and label), the Job counts an index
// done once one of its pods succeeded, and status.completedIndexes / failedIndexes list the
// indexes in upstream's interval text ("0-2,4,6,7").

const (
	// completionIndexEnvName is the variable every container of an Indexed Job's pods gets,
	// read through the downward API from the completion index label.
	completionIndexEnvName = "JOB_COMPLETION_INDEX"
	// unknownIndex is a pod's index when it has none, or an unreadable one.
	unknownIndex = -1
	// maxGeneratedNameLength is the API server's limit on a generateName prefix
	// (k8s.io/apiserver/pkg/storage/names.MaxGeneratedNameLength): 63 less 5 random characters.
	maxGeneratedNameLength = 63 - 5
)

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return job.Spec.BackoffLimitPerIndex != nil
}

// interval is the indexes First..Last, both included.
type interval struct{ First, Last int }

// intervals is a set of indexes as sorted, disjoint, non-adjacent intervals.
type intervals []interval

// parseIntervals reads upstream's interval text, keeping only indexes below completions;
// malformed parts are skipped (the field is status, which anyone with the status
// subresource can write).
func parseIntervals(logger klog.Logger, text string, completions int) intervals {
	if text == "" {
		return nil
	}
	var result intervals
	for _, part := range strings.Split(text, ",") {
		limits := strings.Split(part, "-")
		first, err := strconv.Atoi(limits[0])
		if err != nil {
			logger.Info("Corrupted indexes interval, ignoring", "interval", part, "err", err)
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if len(limits) > 1 {
			if last, err = strconv.Atoi(limits[1]); err != nil {
				logger.Info("Corrupted indexes interval, ignoring", "interval", part, "err", err)
				continue
			}
			last = min(last, completions-1)
		}
		if n := len(result); n > 0 && result[n-1].Last == first-1 {
			result[n-1].Last = last
		} else {
			result = append(result, interval{first, last})
		}
	}
	return result
}

// String is upstream's text: intervals of three or more as "a-b", two as "a,b".
func (iv intervals) String() string {
	var b strings.Builder
	for _, v := range iv {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v.First))
		switch {
		case v.Last == v.First+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(v.Last))
		case v.Last > v.First:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(v.Last))
		}
	}
	return b.String()
}

// total is the number of indexes.
func (iv intervals) total() int {
	n := 0
	for _, v := range iv {
		n += v.Last - v.First + 1
	}
	return n
}

// has reports whether ix is one of the indexes.
func (iv intervals) has(ix int) bool {
	i := sort.Search(len(iv), func(i int) bool { return iv[i].Last >= ix })
	return i < len(iv) && iv[i].First <= ix
}

// withIndexes is iv with the given indexes, sorted ascending, added.
func (iv intervals) withIndexes(sorted []int) intervals {
	add := make(intervals, len(sorted))
	for i, ix := range sorted {
		add[i] = interval{ix, ix}
	}
	return iv.merge(add)
}

// merge is the union of iv and other.
func (iv intervals) merge(other intervals) intervals {
	var result intervals
	push := func(v interval) {
		n := len(result)
		switch {
		case n == 0 || v.First > result[n-1].Last+1:
			result = append(result, v)
		case result[n-1].Last < v.Last:
			result[n-1].Last = v.Last
		}
	}
	i, j := 0, 0
	for i < len(iv) && j < len(other) {
		if iv[i].First < other[j].First {
			push(iv[i])
			i++
		} else {
			push(other[j])
			j++
		}
	}
	for ; i < len(iv); i++ {
		push(iv[i])
	}
	for ; j < len(other); j++ {
		push(other[j])
	}
	return result
}

// completionIndex is the pod's completion index from its annotation, or unknownIndex.
func completionIndex(pod *corev1.Pod) int {
	v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return unknownIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return unknownIndex
	}
	return i
}

// validIndex reports whether the pod has an index below the Job's completions.
func validIndex(job *batchv1.Job, pod *corev1.Pod) bool {
	ix := completionIndex(pod)
	return ix != unknownIndex && ix < int(*job.Spec.Completions)
}

// indexesOf is the set of the pods' indexes.
func indexesOf(pods []*corev1.Pod) sets.Set[int] {
	result := sets.New[int]()
	for _, p := range pods {
		if ix := completionIndex(p); ix != unknownIndex {
			result.Insert(ix)
		}
	}
	return result
}

// succeededIndexes are the indexes status.completedIndexes records (prev), and those with
// the indexes of succeeded pods not yet counted (still holding the tracking finalizer) added.
func succeededIndexes(logger klog.Logger, job *batchv1.Job, pods []*corev1.Pod) (prev, cur intervals) {
	prev = parseIntervals(logger, job.Status.CompletedIndexes, int(*job.Spec.Completions))
	newly := sets.New[int]()
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded && validIndex(job, p) && hasTrackingFinalizer(p) {
			newly.Insert(completionIndex(p))
		}
	}
	return prev, prev.withIndexes(sets.List(newly))
}

// failedIndexes are status.failedIndexes with the indexes that failed since added: an index
// fails when a pod of it matched a FailIndex rule, or failed (counted) with the index's
// failure count already at backoffLimitPerIndex.
func failedIndexes(logger klog.Logger, job *batchv1.Job, pods []*corev1.Pod) intervals {
	var prev intervals
	if job.Status.FailedIndexes != nil {
		prev = parseIntervals(logger, *job.Status.FailedIndexes, int(*job.Spec.Completions))
	}
	newly := sets.New[int]()
	for _, p := range pods {
		if validIndex(job, p) && hasTrackingFinalizer(p) && isIndexFailed(logger, job, p) {
			newly.Insert(completionIndex(p))
		}
	}
	return prev.withIndexes(sets.List(newly))
}

func isIndexFailed(logger klog.Logger, job *batchv1.Job, pod *corev1.Pod) bool {
	if !isPodFailed(pod, job) {
		return false
	}
	counted := true
	if job.Spec.PodFailurePolicy != nil {
		m := matchPodFailurePolicy(job.Spec.PodFailurePolicy, pod)
		if m.action != nil && *m.action == batchv1.PodFailurePolicyActionFailIndex {
			return true
		}
		counted = m.count
	}
	return counted && indexFailureCount(logger, pod) >= *job.Spec.BackoffLimitPerIndex
}

// pendingIndexes are the first count indexes below completions that no active pod runs and
// that neither succeeded nor failed (nor, with podReplacementPolicy Failed, have a pod still
// terminating).
func pendingIndexes(job *batchv1.Job, pods, active []*corev1.Pod, succeeded intervals, failed *intervals, count, completions int) []int {
	if count == 0 {
		return nil
	}
	taken := succeeded.withIndexes(sets.List(indexesOf(active)))
	if onlyReplaceFailedPods(job) {
		taken = taken.withIndexes(sets.List(indexesOf(podcontrol.FilterTerminatingPods(pods))))
	}
	if failed != nil {
		taken = taken.merge(*failed)
	}
	result := make([]int, 0, count)
	candidate := 0
	for _, v := range taken {
		for ; candidate < completions && len(result) < count && candidate < v.First; candidate++ {
			result = append(result, candidate)
		}
		candidate = max(candidate, v.Last+1)
	}
	for ; candidate < completions && len(result) < count; candidate++ {
		result = append(result, candidate)
	}
	return result
}

// duplicateIndexPods splits active pods into those to remove (without an index, with one
// out of range, or all but the best-ranked of each repeated index) and the rest.
func duplicateIndexPods(pods []*corev1.Pod, completions int) (rm, left []*corev1.Pod) {
	sorted := slices.Clone(pods)
	sortByIndex(sorted)
	for start := 0; start < len(sorted); {
		ix := completionIndex(sorted[start])
		end := start + 1
		for end < len(sorted) && completionIndex(sorted[end]) == ix {
			end++
		}
		same := sorted[start:end]
		switch {
		case ix == unknownIndex || ix >= completions:
			rm = append(rm, same...)
		case len(same) == 1:
			left = append(left, same[0])
		default:
			// Keep the pod that would be deleted last.
			sort.Sort(podcontrol.ActivePods(same))
			rm = append(rm, same[:len(same)-1]...)
			left = append(left, same[len(same)-1])
		}
		start = end
	}
	return rm, left
}

func sortByIndex(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return completionIndex(pods[i]) < completionIndex(pods[j]) })
}

// podsWithDelayedDeletion are, per index, the failed pod whose finalizer stays until its
// replacement exists (with backoffLimitPerIndex), so that the replacement can carry on its
// index failure count: the latest failure of each index that is not done and not running.
func podsWithDelayedDeletion(logger klog.Logger, job *batchv1.Job, pods []*corev1.Pod, active []*corev1.Pod,
	succeeded intervals, failed *intervals, expectedRemovals sets.Set[types.UID]) map[int]*corev1.Pod {
	activeIndexes := indexesOf(active)
	result := make(map[int]*corev1.Pod)
	for _, p := range countablePods(job, pods, nil, expectedRemovals) {
		if !isPodFailed(p, job) {
			continue
		}
		ix := completionIndex(p)
		if succeeded.has(ix) || (failed != nil && failed.has(ix)) || activeIndexes.Has(ix) {
			continue
		}
		if last, ok := result[ix]; ok {
			if absoluteIndexFailureCount(logger, last) <= absoluteIndexFailureCount(logger, p) && !finishedTime(p).Before(finishedTime(last)) {
				result[ix] = p
			}
		} else {
			result[ix] = p
		}
	}
	return result
}

// indexFailureCounts are the batch.kubernetes.io/job-index-failure-count and
// job-index-ignored-failure-count of a replacement for replaced (nil: the index's first pod).
func indexFailureCounts(logger klog.Logger, job *batchv1.Job, replaced *corev1.Pod) (failures, ignored int32) {
	if replaced == nil {
		return 0, 0
	}
	failures, ignored = indexFailureCount(logger, replaced), ignoredIndexFailureCount(logger, replaced)
	if job.Spec.PodFailurePolicy == nil || matchPodFailurePolicy(job.Spec.PodFailurePolicy, replaced).count {
		failures++
	} else {
		ignored++
	}
	return failures, ignored
}

func indexFailureCount(logger klog.Logger, pod *corev1.Pod) int32 {
	return annotationInt32(logger, pod, batchv1.JobIndexFailureCountAnnotation)
}

func ignoredIndexFailureCount(logger klog.Logger, pod *corev1.Pod) int32 {
	return annotationInt32(logger, pod, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

func absoluteIndexFailureCount(logger klog.Logger, pod *corev1.Pod) int32 {
	return indexFailureCount(logger, pod) + ignoredIndexFailureCount(logger, pod)
}

// annotationInt32 reads a count annotation; missing, unparsable or out of range reads 0, as
// upstream (users can write pods' annotations).
func annotationInt32(logger klog.Logger, pod *corev1.Pod, key string) int32 {
	v, ok := pod.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > math.MaxInt32 {
		logger.Info("Ignoring an invalid pod annotation", "pod", klog.KObj(pod), "annotation", key, "value", v)
		return 0
	}
	return int32(n)
}

// addCompletionIndexEnv gives every container JOB_COMPLETION_INDEX from the pod's completion
// index label, as upstream does at pod creation (a container that sets it keeps its own).
func addCompletionIndexEnv(spec *corev1.PodSpec) {
	add := func(c *corev1.Container) {
		for _, e := range c.Env {
			if e.Name == completionIndexEnvName {
				return
			}
		}
		c.Env = append(c.Env, corev1.EnvVar{
			Name: completionIndexEnvName,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation),
			}},
		})
	}
	for i := range spec.InitContainers {
		add(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		add(&spec.Containers[i])
	}
}

// indexedGenerateName is "<job>-<index>-", the job name cut so that the prefix fits.
func indexedGenerateName(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	prefix := jobName + suffix
	if len(prefix) > maxGeneratedNameLength {
		prefix = prefix[:maxGeneratedNameLength-len(suffix)] + suffix
	}
	return prefix
}
