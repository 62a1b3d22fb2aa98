package namespace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
)

// deletionReport is what one pass over a terminating namespace's content found. The
// namespace's status conditions are a pure function of it (conditionsFor), so that
// `kubectl describe namespace` explains why a namespace is stuck in Terminating.
type deletionReport struct {
	// discoveryErr is set when some API groups could not be discovered: content may hide there.
	discoveryErr error
	// groupVersionErr is set when discovery returned a group version that does not parse.
	groupVersionErr error
	// contentErrs are the failures to delete or list one resource each.
	contentErrs []error
	// remaining counts the objects still present, by resource.
	remaining map[schema.GroupVersionResource]int
	// finalizers counts the remaining objects by the finalizers holding them.
	finalizers map[string]int
	// estimate is how long until the graceful deletions of the remaining objects should be
	// done; zero when nothing remains or nothing is expected to go away by itself.
	estimate time.Duration
}

// conditionOrder is the order in which the controller keeps its conditions, one of each,
// whether they report a failure (status True) or its absence (status False).
var conditionOrder = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// healthy is the status False variant of each condition: the reason and message Kubernetes
// shows once the problem is gone.
var healthy = map[corev1.NamespaceConditionType]struct{ reason, message string }{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// conditionsFor returns the five deletion conditions that describe r, in conditionOrder.
// LastTransitionTime is left zero: mergeConditions sets it.
func conditionsFor(r deletionReport) []corev1.NamespaceCondition {
	failing := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	fail := func(t corev1.NamespaceConditionType, reason, message string) {
		failing[t] = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message}
	}

	if r.discoveryErr != nil {
		msg := r.discoveryErr.Error()
		if failed, ok := r.discoveryErr.(*discovery.ErrGroupDiscoveryFailed); ok {
			msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(failed.Groups), failed)
		}
		fail(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
	}
	if r.groupVersionErr != nil {
		fail(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", r.groupVersionErr.Error())
	}
	if len(r.contentErrs) > 0 {
		msgs := make([]string, 0, len(r.contentErrs))
		for _, err := range r.contentErrs {
			msgs = append(msgs, err.Error())
		}
		sort.Strings(msgs)
		fail(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")))
	}

	var resources []string
	for gvr, n := range r.remaining {
		if n > 0 {
			resources = append(resources, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
	}
	if len(resources) > 0 {
		sort.Strings(resources) // stable messages, so an unchanged state writes nothing
		fail(corev1.NamespaceContentRemaining, "SomeResourcesRemain",
			"Some resources are remaining: "+strings.Join(resources, ", "))
	}

	var finalizers []string
	for name, n := range r.finalizers {
		if n > 0 {
			finalizers = append(finalizers, fmt.Sprintf("%s in %d resource instances", name, n))
		}
	}
	if len(finalizers) > 0 {
		sort.Strings(finalizers)
		fail(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+strings.Join(finalizers, ", "))
	}

	conditions := make([]corev1.NamespaceCondition, 0, len(conditionOrder))
	for _, t := range conditionOrder {
		c, ok := failing[t]
		if !ok {
			c = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: healthy[t].reason, Message: healthy[t].message}
		}
		conditions = append(conditions, c)
	}
	return conditions
}

// mergeConditions writes want into status, keeping conditions of other types, and reports
// whether anything changed. A condition's LastTransitionTime moves only when its status does.
func mergeConditions(status *corev1.NamespaceStatus, want []corev1.NamespaceCondition, now metav1.Time) bool {
	changed := false
	for _, w := range want {
		i := conditionIndex(status.Conditions, w.Type)
		if i < 0 {
			w.LastTransitionTime = now
			status.Conditions = append(status.Conditions, w)
			changed = true
			continue
		}
		have := &status.Conditions[i]
		if have.Status == w.Status && have.Reason == w.Reason && have.Message == w.Message {
			continue
		}
		if have.Status != w.Status {
			have.LastTransitionTime = now
		}
		have.Status, have.Reason, have.Message = w.Status, w.Reason, w.Message
		changed = true
	}
	return changed
}

func conditionIndex(conditions []corev1.NamespaceCondition, t corev1.NamespaceConditionType) int {
	for i := range conditions {
		if conditions[i].Type == t {
			return i
		}
	}
	return -1
}

// err is the pass's failure, if any. Any failure keeps the namespace from being finalized,
// since the content it hides might outlive the namespace.
func (r deletionReport) err() error {
	var errs []error
	if r.discoveryErr != nil {
		errs = append(errs, fmt.Errorf("discovering namespaced resources: %w", r.discoveryErr))
	}
	if r.groupVersionErr != nil {
		errs = append(errs, fmt.Errorf("parsing discovered group versions: %w", r.groupVersionErr))
	}
	errs = append(errs, r.contentErrs...)
	return utilerrors.NewAggregate(errs)
}
