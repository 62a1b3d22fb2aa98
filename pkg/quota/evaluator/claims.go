package evaluator

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

var claimCount = generic.ObjectCountQuotaResourceNameFor(corev1.Resource("persistentvolumeclaims"))

// claimResources are the claim names that may also be charged per storage class, as
// "<class>.storageclass.storage.k8s.io/<name>".
var claimResources = []corev1.ResourceName{corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}

// storageClassSuffix joins a storage class to a claim resource name.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// ByStorageClass is the quota name of resource charged to claims of storageClass.
func ByStorageClass(storageClass string, name corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName(storageClass + storageClassSuffix + string(name))
}

// claimEvaluator charges PersistentVolumeClaims: their count and requested storage, overall
// and per storage class.
type claimEvaluator struct {
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = &claimEvaluator{}

func (*claimEvaluator) GroupResource() schema.GroupResource {
	return corev1.Resource("persistentvolumeclaims")
}

func (*claimEvaluator) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// Handles creates and updates (a claim may grow), and status updates that change what the
// claim is charged: a larger allocation, or another VolumeAttributesClass.
func (*claimEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	switch a.GetSubresource() {
	case "":
		return op == admission.Create || op == admission.Update
	case "status":
		claim, err1 := asClaim(a.GetObject())
		old, err2 := asClaim(a.GetOldObject())
		return err1 == nil && err2 == nil && ClaimNeedsReplenish(claim, old)
	}
	return false
}

func (e *claimEvaluator) Matches(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	return generic.Matches(q, obj, e.MatchingResources, claimMatchesScope)
}

func (*claimEvaluator) MatchingScopes(obj runtime.Object, selectors []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	matched := []corev1.ScopedResourceSelectorRequirement{}
	for _, s := range selectors {
		ok, err := claimMatchesScope(s, obj)
		if err != nil {
			return []corev1.ScopedResourceSelectorRequirement{}, fmt.Errorf("error on matching scope %v: %w", s, err)
		}
		if ok {
			matched = append(matched, s)
		}
	}
	return matched, nil
}

func (*claimEvaluator) UncoveredQuotaScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	uncovered := []corev1.ScopedResourceSelectorRequirement{}
	for _, s := range limited {
		if !slices.ContainsFunc(matched, func(m corev1.ScopedResourceSelectorRequirement) bool { return m.ScopeName == s.ScopeName }) {
			uncovered = append(uncovered, s)
		}
	}
	return uncovered, nil
}

func (*claimEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	result := []corev1.ResourceName{}
	for _, name := range input {
		if name == claimCount || slices.Contains(claimResources, name) {
			result = append(result, name)
			continue
		}
		for _, r := range claimResources {
			if strings.HasSuffix(string(name), storageClassSuffix+string(r)) {
				result = append(result, name)
				break
			}
		}
	}
	return result
}

func (*claimEvaluator) Usage(obj runtime.Object) (corev1.ResourceList, error) {
	claim, err := asClaim(obj)
	if err != nil {
		return corev1.ResourceList{}, err
	}
	return ClaimUsage(claim), nil
}

func (e *claimEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, e.list, claimMatchesScope, e.Usage)
}

// ClaimUsage is what claim uses: one claim, and its storage request in whole bytes (or the
// storage allocated to it, when larger: an expansion that failed and was asked back down
// still holds what it was given), overall and for its storage class.
func ClaimUsage(claim *corev1.PersistentVolumeClaim) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	result := corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: one, claimCount: one}
	class := volumehelpers.GetPersistentVolumeClaimClass(claim)
	if class != "" {
		result[ByStorageClass(class, corev1.ResourcePersistentVolumeClaims)] = one
	}
	request, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return result
	}
	storage := wholeBytes(request)
	if allocated, ok := claim.Status.AllocatedResources[corev1.ResourceStorage]; ok && allocated.Cmp(storage) > 0 {
		storage = wholeBytes(allocated)
	}
	result[corev1.ResourceRequestsStorage] = storage
	if class != "" {
		result[ByStorageClass(class, corev1.ResourceRequestsStorage)] = storage
	}
	return result
}

// wholeBytes rounds q up to a whole number of bytes, which quota's validation requires of
// storage.
func wholeBytes(q resource.Quantity) resource.Quantity {
	q = q.DeepCopy()
	q.RoundUp(0)
	return q
}

// ClaimNeedsReplenish reports whether a status change from old to claim changes its charge:
// another allocated size, or another set of VolumeAttributesClasses.
func ClaimNeedsReplenish(claim, old *corev1.PersistentVolumeClaim) bool {
	if old.Status.AllocatedResources.Storage().Cmp(*claim.Status.AllocatedResources.Storage()) != 0 {
		return true
	}
	return !attributesClasses(old).Equal(attributesClasses(claim))
}

// claimMatchesScope reports whether obj, a claim, is in the VolumeAttributesClass scope s
// selects; claims are in no other scope.
func claimMatchesScope(s corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	claim, err := asClaim(obj)
	if err != nil {
		return false, err
	}
	if s.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	classes := attributesClasses(claim)
	if s.Operator == corev1.ScopeSelectorOpExists {
		return classes.Len() != 0, nil
	}
	if classes.Len() == 0 {
		return scopeSelectorMatches(s, labels.Set{})
	}
	for _, c := range sets.List(classes) {
		if ok, err := scopeSelectorMatches(s, labels.Set{string(corev1.ResourceQuotaScopeVolumeAttributesClass): c}); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// attributesClasses are the VolumeAttributesClasses claim names: asked for, current, and the
// target of a modification under way.
func attributesClasses(claim *corev1.PersistentVolumeClaim) sets.Set[string] {
	names := sets.New[string]()
	if c := claim.Spec.VolumeAttributesClassName; c != nil && *c != "" {
		names.Insert(*c)
	}
	if c := claim.Status.CurrentVolumeAttributesClassName; c != nil && *c != "" {
		names.Insert(*c)
	}
	if m := claim.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		names.Insert(m.TargetVolumeAttributesClassName)
	}
	return names
}

func asClaim(obj runtime.Object) (*corev1.PersistentVolumeClaim, error) {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("expect *v1.PersistentVolumeClaim, got %T", obj)
	}
	return claim, nil
}
