// Package helper holds the few pieces several scheduler plugins share: scaling raw Score
// results to 0..100 (the NormalizeScore step of prioritizeNodes), picking the taints that
// matter to Filter, and reading the objects a QueueingHint is given.
package helper

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// DefaultNormalizeScore scales scores from [0, max(scores)] to [0, maxPriority], in place.
// With reverse, a high raw score is bad: each score becomes maxPriority minus its scaled
// value, and when all raw scores are 0 every node gets maxPriority. Raw scores must not be
// negative.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores framework.NodeScoreList) *framework.Status {
	var highest int64
	for i := range scores {
		highest = max(highest, scores[i].Score)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / highest
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}

// DoNotScheduleTaintsFilterFunc selects the taints that keep a pod off a node: NoSchedule and
// NoExecute (PreferNoSchedule only lowers the score).
func DoNotScheduleTaintsFilterFunc() func(t *v1.Taint) bool {
	return isDoNotScheduleTaint
}

func isDoNotScheduleTaint(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// FindMatchingUntoleratedTaint returns the first taint that inclusionFilter selects (all
// when nil) and no toleration tolerates. It is component-helpers' function of the same name
// without the slice it allocates, since Filter calls it for every node.
func FindMatchingUntoleratedTaint(logger klog.Logger, taints []v1.Taint, tolerations []v1.Toleration, inclusionFilter func(*v1.Taint) bool) (v1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if inclusionFilter != nil && !inclusionFilter(t) {
			continue
		}
		if !TolerationsTolerateTaint(logger, tolerations, t) {
			return *t, true
		}
	}
	return v1.Taint{}, false
}

// TolerationsTolerateTaint reports whether any toleration tolerates taint. The numeric Gt/Lt
// operators are off, as the TaintTolerationComparisonOperators feature gate (alpha) is by
// default.
func TolerationsTolerateTaint(logger klog.Logger, tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logger, taint, false) {
			return true
		}
	}
	return false
}

// As converts a QueueingHint's old and new objects to T; either may be nil (an add has no old
// object, a delete no new one). A deleted object the informer saw only as a tombstone is
// unwrapped.
func As[T any](oldObj, newObj interface{}) (T, T, error) {
	var oldT, newT T
	if newObj != nil {
		v, ok := newObj.(T)
		if !ok {
			return oldT, newT, fmt.Errorf("expected %T, but got %T", newT, newObj)
		}
		newT = v
	}
	if oldObj != nil {
		if d, ok := oldObj.(cache.DeletedFinalStateUnknown); ok {
			oldObj = d.Obj
		}
		v, ok := oldObj.(T)
		if !ok {
			return oldT, newT, fmt.Errorf("expected %T, but got %T", oldT, oldObj)
		}
		oldT = v
	}
	return oldT, newT, nil
}
