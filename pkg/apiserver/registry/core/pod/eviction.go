package pod

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/client-go/util/retry"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	"k8s.io/utils/ptr"
)

// DisruptionBudgets is what an eviction needs of the PodDisruptionBudgets: those of a
// namespace, one by name, and a write of one's status that fails with a Conflict when the
// budget changed since it was read. The budget registry's Budgets implements it on its store.
type DisruptionBudgets interface {
	List(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error)
	Get(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error)
	UpdateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error
}

// maxDisruptedPods bounds status.disruptedPods: past it, too many evictions wait for the
// disruption controller to confirm them, and the budget refuses more.
const maxDisruptedPods = 2000

// evictionRetry is upstream's retry of conflicts with other writers of the pod or budget.
var evictionRetry = wait.Backoff{Steps: 20, Duration: 500 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// EvictionREST serves pods/eviction: a delete that a PodDisruptionBudget may refuse, as
// upstream's. A pod whose deletion disrupts nothing more (not yet running, terminal, or
// already terminating) is deleted at once. Otherwise its one matching budget must allow a
// disruption: the eviction then spends it (disruptionsAllowed - 1, the pod recorded in
// disruptedPods for the disruption controller) before deleting the pod. An unready pod may
// go without spending the budget when the budget's unhealthyPodEvictionPolicy says so.
type EvictionREST struct {
	pods    evictedPods
	budgets DisruptionBudgets
	retry   wait.Backoff
	now     func() time.Time
}

// evictedPods is what an eviction does to pods: read one, and mark and delete one.
type evictedPods interface {
	get(ctx context.Context, name string) (*corev1.Pod, error)
	markAndDelete(ctx context.Context, name string, options *metav1.DeleteOptions) error
}

// storePods are the pods of the pods store.
type storePods struct{ store *genericregistry.Store }

var (
	_ rest.NamedCreater             = &EvictionREST{}
	_ rest.GroupVersionKindProvider = &EvictionREST{}
)

// NewEvictionREST returns pods/eviction over the pods store, checking evictions against
// budgets (which must not be nil).
func NewEvictionREST(pods *genericregistry.Store, budgets DisruptionBudgets) *EvictionREST {
	return &EvictionREST{pods: storePods{pods}, budgets: budgets, retry: evictionRetry, now: time.Now}
}

// New returns an empty Eviction.
func (r *EvictionREST) New() runtime.Object { return &policyv1.Eviction{} }

// Destroy does nothing: the pods store owns the storage.
func (r *EvictionREST) Destroy() {}

// GroupVersionKind says that pods/eviction takes a policy/v1 Eviction, although it is a
// subresource of the core group.
func (r *EvictionREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return policyv1.SchemeGroupVersion.WithKind("Eviction")
}

// Create evicts the pod named in the URL.
func (r *EvictionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	eviction, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Eviction object: %T", obj))
	}
	if name != eviction.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if eviction.DeleteOptions != nil && ptr.Deref(eviction.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		return nil, apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions", "ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option"),
		})
	}
	deleteOptions, err := propagateDryRun(eviction, options)
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, eviction.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	original := deleteOptions
	pod, deleted, err := r.deleteIfNoBudgetApplies(ctx, name, deleteOptions)
	switch {
	case err != nil:
		return nil, err
	case deleted:
		return &metav1.Status{Status: metav1.StatusSuccess}, nil
	}
	decision, err := r.spendBudget(ctx, pod, dryrun.IsDryRun(deleteOptions.DryRun))
	if err != nil {
		return nil, err
	}
	if decision.refusal != nil {
		return decision.refusal, nil
	}
	if decision.unhealthy {
		// The pod goes unbudgeted because it is unready: it must still be the pod judged so.
		deleteOptions = deleteOptions.DeepCopy()
		setResourceVersionPrecondition(deleteOptions, pod.ResourceVersion)
	}
	if err := r.pods.markAndDelete(ctx, name, deleteOptions); err != nil {
		if apierrors.IsConflict(err) && decision.unhealthy && resourceVersionUnset(original) {
			// The pod changed (it may be ready now): the client should ask again.
			return nil, tooManyRequests(decision.budget)
		}
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// propagateDryRun carries the request's dry-run into the eviction's delete options, refusing
// two different ones, in upstream's words.
func propagateDryRun(eviction *policyv1.Eviction, options *metav1.CreateOptions) (*metav1.DeleteOptions, error) {
	if eviction.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: options.DryRun}, nil
	}
	o := eviction.DeleteOptions.DeepCopy()
	switch {
	case len(o.DryRun) == 0:
		o.DryRun = options.DryRun
	case len(options.DryRun) != 0 && !reflect.DeepEqual(options.DryRun, o.DryRun):
		return nil, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", options.DryRun, o.DryRun) //nolint:staticcheck // upstream's text
	}
	return o, nil
}

// deleteIfNoBudgetApplies deletes the pod when no budget guards it (it is not running yet,
// is terminal or already terminating), retrying conflicts unless the client named a
// resourceVersion. Otherwise it returns the pod, for the budget check.
func (r *EvictionREST) deleteIfNoBudgetApplies(ctx context.Context, name string, options *metav1.DeleteOptions) (*corev1.Pod, bool, error) {
	shouldRetry := apierrors.IsConflict
	if !resourceVersionUnset(options) {
		shouldRetry = func(error) bool { return false }
	}
	var pod *corev1.Pod
	deleted := false
	err := retry.OnError(r.retry, shouldRetry, func() error {
		var err error
		if pod, err = r.pods.get(ctx, name); err != nil {
			return err
		}
		if !budgetIgnored(pod) {
			return nil
		}
		opts := options
		// A pending pod may start meanwhile: delete only the pod just judged, unless the
		// client named its own resourceVersion, which it may have read earlier.
		if !terminalOrTerminating(pod) && resourceVersionUnset(options) {
			opts = options.DeepCopy()
			setResourceVersionPrecondition(opts, pod.ResourceVersion)
		}
		if err := r.pods.markAndDelete(ctx, name, opts); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	return pod, deleted, err
}

// budgetIgnored: deleting a pod that has not started, has ended or is ending disrupts nothing
// a budget counts.
func budgetIgnored(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodPending || terminalOrTerminating(pod)
}

func terminalOrTerminating(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil
}

// budgetDecision is what the budget check concluded: refused with a status (not an error, as
// upstream answers "more than one budget"), allowed as unhealthy without spending, or allowed
// (after spending budget, when there is one).
type budgetDecision struct {
	refusal   *metav1.Status
	unhealthy bool
	budget    string
}

// spendBudget finds the pod's budget and, if it guards the pod, spends one disruption of it.
func (r *EvictionREST) spendBudget(ctx context.Context, pod *corev1.Pod, dryRun bool) (budgetDecision, error) {
	pdbs, err := r.matchingBudgets(ctx, pod)
	if err != nil {
		return budgetDecision{}, err
	}
	switch len(pdbs) {
	case 0:
		return budgetDecision{}, nil
	case 1:
	default:
		return budgetDecision{refusal: &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
			Code:    500,
		}}, nil
	}
	pdb := &pdbs[0]
	decision := budgetDecision{budget: pdb.Name}
	if !podReady(pod) {
		// An unready pod counts towards neither currentHealthy nor desiredHealthy: it may go
		// without spending the budget when the policy says so, or when the application is
		// healthy without it.
		if ptr.Deref(pdb.Spec.UnhealthyPodEvictionPolicy, "") == policyv1.AlwaysAllow ||
			(pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0) {
			decision.unhealthy = true
			return decision, nil
		}
		// Otherwise it is judged as a healthy pod: the budget must allow a disruption.
	}
	refresh := false
	err = retry.RetryOnConflict(r.retry, func() error {
		if refresh {
			if pdb, err = r.budgets.Get(ctx, pod.Namespace, decision.budget); err != nil {
				return err
			}
		}
		refresh = true
		return r.checkAndDecrement(ctx, pod.Name, pdb, dryRun)
	})
	if wait.Interrupted(err) {
		err = apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", decision.budget), 10)
	}
	return decision, err
}

// matchingBudgets lists the budgets of the pod's namespace whose selector picks it; a budget
// whose selector does not parse picks nothing.
func (r *EvictionREST) matchingBudgets(ctx context.Context, pod *corev1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	all, err := r.budgets.List(ctx, pod.Namespace)
	if err != nil {
		return nil, err
	}
	var matching []policyv1.PodDisruptionBudget
	for _, pdb := range all {
		if pdb.Namespace != pod.Namespace {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		matching = append(matching, pdb)
	}
	return matching, nil
}

// checkAndDecrement spends one disruption of pdb for podName, or says, in upstream's words,
// why the budget cannot be spent.
func (r *EvictionREST) checkAndDecrement(ctx context.Context, podName string, read *policyv1.PodDisruptionBudget, dryRun bool) error {
	// A copy to change: what the store returned may be shared with its cache.
	pdb := read.DeepCopy()
	if pdb.Status.ObservedGeneration < pdb.Generation {
		// The controller has not computed the budget of the current spec yet.
		return tooManyRequests(pdb.Name)
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return budgetForbidden(pdb.Name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
		return budgetForbidden(pdb.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			"too many pending evictions not confirmed by PDB controller")
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: noDisruptionMessage(pdb)})
		return err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		pdbhelper.UpdateDisruptionAllowedCondition(pdb)
	}
	if dryRun {
		return nil
	}
	// Tell the disruption controller the pod is going, so that it no longer counts it as
	// available; it forgets the entry if the pod is not deleted soon.
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.Time{Time: r.now()}
	return r.budgets.UpdateStatus(ctx, pdb)
}

// noDisruptionMessage says why a budget allows no disruption, most trustworthy reason first.
func noDisruptionMessage(pdb *policyv1.PodDisruptionBudget) string {
	c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	failing := c != nil && c.Status == metav1.ConditionFalse && c.Message != ""
	switch {
	// A failed sync makes the health counts untrustworthy: say so first.
	case failing && c.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, c.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case failing:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, c.Reason, c.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
}

// tooManyRequests is the 429 that tells a client to retry the eviction later.
func tooManyRequests(budget string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", budget),
	})
	return err
}

func budgetForbidden(budget, reason, detail string) error {
	err := apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), budget, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", budget, detail),
	})
	return err
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func resourceVersionUnset(o *metav1.DeleteOptions) bool {
	return o == nil || o.Preconditions == nil || o.Preconditions.ResourceVersion == nil
}

func setResourceVersionPrecondition(o *metav1.DeleteOptions, rv string) {
	if o.Preconditions == nil {
		o.Preconditions = &metav1.Preconditions{}
	}
	o.Preconditions.ResourceVersion = &rv
}

// markAndDelete adds the DisruptionTarget condition, so that controllers can tell why the pod
// went, then deletes the pod with the eviction's options. The condition is written to the
// latest pod, after the options' preconditions are checked against it; a resourceVersion
// precondition then moves to the version the condition made. A dry run writes nothing.
func (p storePods) markAndDelete(ctx context.Context, name string, options *metav1.DeleteOptions) error {
	if !dryrun.IsDryRun(options.DryRun) {
		rv, err := p.markDisruptionTarget(ctx, name, options.Preconditions)
		if err != nil {
			return err
		}
		if !resourceVersionUnset(options) {
			options = options.DeepCopy()
			options.Preconditions.ResourceVersion = &rv
		}
	}
	_, _, err := p.store.Delete(ctx, name, rest.ValidateAllObjectFunc, options)
	return err
}

func (p storePods) get(ctx context.Context, name string) (*corev1.Pod, error) {
	obj, err := p.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("getting pod %s: got %T", name, obj)
	}
	return pod, nil
}

func (p storePods) markDisruptionTarget(ctx context.Context, name string, pre *metav1.Preconditions) (string, error) {
	key, err := p.store.KeyFunc(ctx, name)
	if err != nil {
		return "", err
	}
	updated := &corev1.Pod{}
	err = p.store.Storage.GuaranteedUpdate(ctx, key, updated, false, nil,
		storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			pod := obj.(*corev1.Pod)
			if pre != nil {
				if uid := pre.UID; uid != nil && *uid != "" && *uid != pod.UID {
					return nil, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, pod.Name,
						fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *uid, pod.UID))
				}
				if rv := pre.ResourceVersion; rv != nil && *rv != "" && *rv != pod.ResourceVersion {
					return nil, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, pod.Name,
						fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *rv, pod.ResourceVersion))
				}
			}
			SetCondition(&pod.Status, corev1.PodCondition{
				Type:    corev1.DisruptionTarget,
				Status:  corev1.ConditionTrue,
				Reason:  "EvictionByEvictionAPI",
				Message: "Eviction API: evicting",
			})
			return pod, nil
		}), false, nil)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return "", err
		}
		return "", storeerr.InterpretUpdateError(storeerr.InterpretGetError(err, corev1.Resource("pods"), name), corev1.Resource("pods"), name)
	}
	return updated.ResourceVersion, nil
}
