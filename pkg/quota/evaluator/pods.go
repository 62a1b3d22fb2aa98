package evaluator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/qos"

	"github.com/berth-cluster/berth/pkg/apis/core/resourcename"
)

// podCount is the object-count name of pods: every stored pod, terminated or not.
var podCount = generic.ObjectCountQuotaResourceNameFor(corev1.Resource("pods"))

// podResources are the fixed names the pod evaluator charges. "pods" counts only pods that
// still run (see Charged), "count/pods" all of them.
var podResources = []corev1.ResourceName{
	podCount,
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods,
}

// requiredPerContainer are the names a quota makes every container state: a quota on cpu or
// memory refuses a pod whose containers do not request (or limit) it. Upstream calls this a
// mistake it keeps for compatibility, and adds no other resource to it.
var requiredPerContainer = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
)

// podEvaluator charges pods: their count and their compute requests and limits.
type podEvaluator struct {
	list  generic.ListFuncByNamespace
	clock clock.PassiveClock
}

var _ quota.Evaluator = &podEvaluator{}

func (*podEvaluator) GroupResource() schema.GroupResource { return corev1.Resource("pods") }

// Constraints refuses a pod some of whose containers do not state a cpu or memory request or
// limit that a quota in required names: "must specify limits.cpu for: a,b; requests.memory
// for: b". A pod with pod-level resources states them for all its containers.
func (*podEvaluator) Constraints(required []corev1.ResourceName, obj runtime.Object) error {
	pod, err := asPod(obj)
	if err != nil {
		return err
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	need := sets.New(required...).Intersection(requiredPerContainer)
	if need.Len() == 0 {
		return nil
	}
	missing := map[corev1.ResourceName]sets.Set[string]{}
	check := func(c *corev1.Container) {
		has := containerUsage(c.Resources.Requests, c.Resources.Limits)
		for name := range need {
			if _, ok := has[name]; !ok {
				if missing[name] == nil {
					missing[name] = sets.New[string]()
				}
				missing[name].Insert(c.Name)
			}
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for _, name := range sets.List(sets.KeySet(missing)) {
		parts = append(parts, fmt.Sprintf("%s for: %s", name, strings.Join(sets.List(missing[name]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// Handles: pod creates, resizes, and updates that move a pod in or out of the Terminating
// scope (activeDeadlineSeconds set or cleared).
func (*podEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	switch a.GetSubresource() {
	case "":
		if op == admission.Update {
			pod, err1 := asPod(a.GetObject())
			old, err2 := asPod(a.GetOldObject())
			return err1 == nil && err2 == nil && IsTerminating(old) != IsTerminating(pod)
		}
		return op == admission.Create
	case "resize":
		return op == admission.Update
	}
	return false
}

func (p *podEvaluator) Matches(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	return generic.Matches(q, obj, p.MatchingResources, podMatchesScope)
}

// MatchingResources picks the names pods are charged under: the fixed ones, hugepages, and
// extended resources in their quota form "requests.<name>".
func (*podEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	result := quota.Intersection(input, podResources)
	for _, name := range input {
		if resourcename.IsHugePagesQuota(name) || isExtendedQuotaName(name) {
			result = append(result, name)
		}
	}
	return result
}

func (*podEvaluator) MatchingScopes(obj runtime.Object, selectors []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	matched := []corev1.ScopedResourceSelectorRequirement{}
	for _, s := range selectors {
		ok, err := podMatchesScope(s, obj)
		if err != nil {
			return []corev1.ScopedResourceSelectorRequirement{}, fmt.Errorf("error on matching scope %v: %w", s, err)
		}
		if ok {
			matched = append(matched, s)
		}
	}
	return matched, nil
}

// UncoveredQuotaScopes are the limited scopes (the admission configuration's
// limitedResources) that no matched quota scope covers.
func (*podEvaluator) UncoveredQuotaScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	uncovered := []corev1.ScopedResourceSelectorRequirement{}
	for _, s := range limited {
		if !slices.ContainsFunc(matched, func(m corev1.ScopedResourceSelectorRequirement) bool { return m.ScopeName == s.ScopeName }) {
			uncovered = append(uncovered, s)
		}
	}
	return uncovered, nil
}

func (p *podEvaluator) Usage(obj runtime.Object) (corev1.ResourceList, error) {
	pod, err := asPod(obj)
	if err != nil {
		return corev1.ResourceList{}, err
	}
	return PodUsage(pod, p.clock.Now()), nil
}

func (p *podEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, p.list, podMatchesScope, p.Usage)
}

// PodUsage is what pod uses at now: always one of count/pods; and, while it is Charged, one
// of pods and its effective requests and limits (the larger of its init and app containers,
// plus overhead, or its pod-level resources; the resources the node allocated when they
// differ from the spec's during a resize).
func PodUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	result := corev1.ResourceList{podCount: *resource.NewQuantity(1, resource.DecimalSI)}
	if !Charged(pod, now) {
		return result
	}
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	return quota.Add(result, containerUsage(resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)))
}

// containerUsage names requests and limits as quota does: cpu is requests.cpu too, a
// limit is limits.<name>, hugepages and extended resources are requests.<name>.
func containerUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	result := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	for _, r := range []struct {
		name, request, limit corev1.ResourceName
	}{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			result[r.name] = q
			result[r.request] = q
		}
		if q, ok := limits[r.name]; ok {
			result[r.limit] = q
		}
	}
	for name, q := range requests {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			result[name] = q
			result[corev1.DefaultResourceRequestsPrefix+name] = q
		}
		if resourcename.IsExtended(name) || strings.HasPrefix(string(name), resourcev1.ResourceDeviceClassPrefix) {
			result[corev1.DefaultResourceRequestsPrefix+name] = q
		}
	}
	return result
}

// Charged reports whether pod's compute resources count against quota at now: not once it
// has terminated, nor once its deletion's grace period is over (a pod stuck terminating on a
// lost node must not keep its owner from replacing it).
func Charged(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

// IsTerminating reports whether pod is in the Terminating scope: it has an active deadline.
func IsTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// podMatchesScope reports whether obj, a pod, is in the scope s selects.
func podMatchesScope(s corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, err := asPod(obj)
	if err != nil {
		return false, err
	}
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return qos.PodQOSClass(pod) == corev1.PodQOSBestEffort, nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return qos.PodQOSClass(pod) != corev1.PodQOSBestEffort, nil
	case corev1.ResourceQuotaScopePriorityClass:
		if s.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		var set labels.Set
		if pod.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return scopeSelectorMatches(s, set)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespaceAffinity(pod), nil
	}
	return false, nil
}

// scopeSelectorMatches evaluates s as a label requirement on set, the scope name as the key.
func scopeSelectorMatches(s corev1.ScopedResourceSelectorRequirement, set labels.Set) (bool, error) {
	ops := map[corev1.ScopeSelectorOperator]selection.Operator{
		corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
		corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	op, ok := ops[s.Operator]
	if !ok {
		return false, fmt.Errorf("failed to parse and convert selector: %q is not a valid scope selector operator", s.Operator)
	}
	req, err := labels.NewRequirement(string(s.ScopeName), op, s.Values)
	if err != nil {
		return false, fmt.Errorf("failed to parse and convert selector: %w", err)
	}
	return labels.NewSelector().Add(*req).Matches(set), nil
}

// usesCrossNamespaceAffinity reports whether a pod (anti-)affinity term of pod reaches other
// namespaces (a namespaces list or a namespace selector).
func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	if pod.Spec.Affinity == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	check := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) bool {
		for i := range required {
			if cross(&required[i]) {
				return true
			}
		}
		for i := range preferred {
			if cross(&preferred[i].PodAffinityTerm) {
				return true
			}
		}
		return false
	}
	if a := pod.Spec.Affinity.PodAffinity; a != nil && check(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	a := pod.Spec.Affinity.PodAntiAffinity
	return a != nil && check(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution)
}

func asPod(obj runtime.Object) (*corev1.Pod, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	return pod, nil
}

// isExtendedQuotaName: "requests.<extended resource>", or the implicit
// "requests.deviceclass.resource.kubernetes.io/<class>" of a DRA device class.
func isExtendedQuotaName(name corev1.ResourceName) bool {
	if !strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return !resourcename.IsNative(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix+resourcev1.ResourceDeviceClassPrefix)
}
