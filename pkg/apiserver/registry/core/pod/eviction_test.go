package pod

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

var evictionNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// fakePods holds one pod and records what the eviction deleted it with.
type fakePods struct {
	pod       *corev1.Pod
	deletes   []*metav1.DeleteOptions
	deleteErr error
}

func (f *fakePods) get(_ context.Context, name string) (*corev1.Pod, error) {
	if f.pod == nil || f.pod.Name != name {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return f.pod.DeepCopy(), nil
}

func (f *fakePods) markAndDelete(_ context.Context, _ string, options *metav1.DeleteOptions) error {
	f.deletes = append(f.deletes, options.DeepCopy())
	return f.deleteErr
}

// fakeBudgets holds a namespace's budgets; the first conflicts status writes fail with a
// Conflict, as when the disruption controller wrote the budget meanwhile.
type fakeBudgets struct {
	items     []policyv1.PodDisruptionBudget
	conflicts int
	writes    []*policyv1.PodDisruptionBudget
	gets      int
}

func (f *fakeBudgets) List(context.Context, string) ([]policyv1.PodDisruptionBudget, error) {
	return append([]policyv1.PodDisruptionBudget(nil), f.items...), nil
}

func (f *fakeBudgets) Get(_ context.Context, _, name string) (*policyv1.PodDisruptionBudget, error) {
	f.gets++
	for i := range f.items {
		if f.items[i].Name == name {
			return f.items[i].DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(policyv1.Resource("poddisruptionbudgets"), name)
}

func (f *fakeBudgets) UpdateStatus(_ context.Context, pdb *policyv1.PodDisruptionBudget) error {
	if f.conflicts > 0 {
		f.conflicts--
		return apierrors.NewConflict(policyv1.Resource("poddisruptionbudgets"), pdb.Name, errors.New("changed"))
	}
	f.writes = append(f.writes, pdb.DeepCopy())
	return nil
}

func evictedPod(phase corev1.PodPhase, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"app": "web"}},
		Status:     corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

func budget(name string, allowed int32, mutate ...func(*policyv1.PodDisruptionBudget)) policyv1.PodDisruptionBudget {
	pdb := policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1, ResourceVersion: "3"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: 2 + allowed, DesiredHealthy: 2, ExpectedPods: 2 + allowed},
	}
	for _, m := range mutate {
		m(&pdb)
	}
	return pdb
}

func newTestEviction(pods *fakePods, budgets *fakeBudgets) *EvictionREST {
	return &EvictionREST{pods: pods, budgets: budgets, retry: wait.Backoff{Steps: 3, Duration: time.Millisecond},
		now: func() time.Time { return evictionNow }}
}

func evict(r *EvictionREST, options *metav1.CreateOptions, deleteOptions *metav1.DeleteOptions) (*metav1.Status, error) {
	if options == nil {
		options = &metav1.CreateOptions{}
	}
	obj, err := r.Create(context.Background(), "web-1", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"}, DeleteOptions: deleteOptions}, nil, options)
	if err != nil {
		return nil, err
	}
	return obj.(*metav1.Status), nil
}

// TestEvictionWithoutBudget: pods no budget guards go at once; a pod not yet terminal is
// deleted only at the version judged.
func TestEvictionWithoutBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		budgets []policyv1.PodDisruptionBudget
		wantRV  bool
	}{
		{"pending, a budget at 0 does not matter", evictedPod(corev1.PodPending, false), []policyv1.PodDisruptionBudget{budget("web", 0)}, true},
		{"succeeded", evictedPod(corev1.PodSucceeded, false), []policyv1.PodDisruptionBudget{budget("web", 0)}, false},
		{"running, no budget", evictedPod(corev1.PodRunning, true), nil, false},
		{"running, another app's budget", evictedPod(corev1.PodRunning, true), []policyv1.PodDisruptionBudget{budget("db", 0, func(p *policyv1.PodDisruptionBudget) {
			p.Spec.Selector.MatchLabels = map[string]string{"app": "db"}
		})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, budgets := &fakePods{pod: tc.pod}, &fakeBudgets{items: tc.budgets}
			status, err := evict(newTestEviction(pods, budgets), nil, nil)
			if err != nil || status.Status != metav1.StatusSuccess {
				t.Fatalf("evict: %v, %v", status, err)
			}
			if len(pods.deletes) != 1 || len(budgets.writes) != 0 {
				t.Fatalf("%d deletes, %d budget writes; want 1 and 0", len(pods.deletes), len(budgets.writes))
			}
			rv := pods.deletes[0].Preconditions
			if tc.wantRV != (rv != nil && ptr.Deref(rv.ResourceVersion, "") == "7") {
				t.Errorf("delete preconditions %+v, want resourceVersion 7: %v", rv, tc.wantRV)
			}
		})
	}
}

// TestEvictionRefused: a budget that allows no disruption answers 429 with upstream's message
// and a DisruptionBudget cause saying why; the pod stays.
func TestEvictionRefused(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pdb        policyv1.PodDisruptionBudget
		isErr      func(error) bool
		wantCause  string
		wantReason string
	}{
		{"no disruption allowed", budget("web", 0), apierrors.IsTooManyRequests,
			"The disruption budget web needs 2 healthy pods and has 2 currently", "Cannot evict pod as it would violate the pod's disruption budget."},
		{"sync failed", budget("web", 0, func(p *policyv1.PodDisruptionBudget) {
			p.Status.CurrentHealthy = 5
			p.Status.Conditions = []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason, Message: "boom"}}
		}), apierrors.IsTooManyRequests, "The disruption budget web does not allow evicting pods currently because it failed sync: boom", ""},
		{"spec not observed yet", budget("web", 3, func(p *policyv1.PodDisruptionBudget) { p.Generation = 2 }), apierrors.IsTooManyRequests,
			"The disruption budget web is still being processed by the server.", ""},
		{"negative", budget("web", -1), apierrors.IsForbidden,
			"The disruption budget web does not allow evicting pods currently: pdb disruptions allowed is negative", ""},
		{"too many pending evictions", budget("web", 1, func(p *policyv1.PodDisruptionBudget) {
			p.Status.DisruptedPods = map[string]metav1.Time{}
			for i := range maxDisruptedPods + 1 {
				p.Status.DisruptedPods[fmt.Sprintf("p-%d", i)] = metav1.Now()
			}
		}), apierrors.IsForbidden, "too many pending evictions not confirmed by PDB controller", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, budgets := &fakePods{pod: evictedPod(corev1.PodRunning, true)}, &fakeBudgets{items: []policyv1.PodDisruptionBudget{tc.pdb}}
			_, err := evict(newTestEviction(pods, budgets), nil, nil)
			if !tc.isErr(err) {
				t.Fatalf("evict: %v, want a refusal", err)
			}
			status := err.(apierrors.APIStatus).Status()
			if tc.wantReason != "" && status.Message != tc.wantReason {
				t.Errorf("message %q, want %q", status.Message, tc.wantReason)
			}
			if status.Details == nil || len(status.Details.Causes) == 0 {
				t.Fatalf("no cause in %+v", status)
			}
			cause := status.Details.Causes[len(status.Details.Causes)-1]
			if cause.Type != policyv1.DisruptionBudgetCause || !strings.Contains(cause.Message, tc.wantCause) {
				t.Errorf("cause %+v, want DisruptionBudget %q", cause, tc.wantCause)
			}
			if len(pods.deletes) != 0 || len(budgets.writes) != 0 {
				t.Errorf("a refused eviction deleted %d pods, wrote %d budgets", len(pods.deletes), len(budgets.writes))
			}
		})
	}
}

// TestEvictionSpendsBudget: an allowed eviction records the pod in disruptedPods, takes one
// disruption, says DisruptionAllowed=False at zero, and then deletes the pod.
func TestEvictionSpendsBudget(t *testing.T) {
	pods, budgets := &fakePods{pod: evictedPod(corev1.PodRunning, true)}, &fakeBudgets{items: []policyv1.PodDisruptionBudget{budget("web", 1)}, conflicts: 1}
	status, err := evict(newTestEviction(pods, budgets), nil, &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](5)})
	if err != nil || status.Status != metav1.StatusSuccess {
		t.Fatalf("evict: %v, %v", status, err)
	}
	if budgets.gets != 1 || len(budgets.writes) != 1 {
		t.Fatalf("after a conflict: %d gets, %d writes; want the budget read again and written once", budgets.gets, len(budgets.writes))
	}
	w := budgets.writes[0]
	if w.Status.DisruptionsAllowed != 0 || !w.Status.DisruptedPods["web-1"].Time.Equal(evictionNow) || w.ResourceVersion != "3" {
		t.Errorf("budget written %+v", w.Status)
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, policyv1.DisruptionAllowedCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.InsufficientPodsReason {
		t.Errorf("DisruptionAllowed condition %+v", c)
	}
	if len(pods.deletes) != 1 || ptr.Deref(pods.deletes[0].GracePeriodSeconds, 0) != 5 || pods.deletes[0].Preconditions != nil {
		t.Errorf("deletes %+v, want one with the eviction's options", pods.deletes)
	}
	if budgets.items[0].Status.DisruptionsAllowed != 1 {
		t.Error("the eviction changed the budget it read in place")
	}
}

func TestEvictionDryRun(t *testing.T) {
	pods, budgets := &fakePods{pod: evictedPod(corev1.PodRunning, true)}, &fakeBudgets{items: []policyv1.PodDisruptionBudget{budget("web", 1)}}
	if _, err := evict(newTestEviction(pods, budgets), &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}, nil); err != nil {
		t.Fatal(err)
	}
	if len(budgets.writes) != 0 || len(pods.deletes) != 1 || len(pods.deletes[0].DryRun) != 1 {
		t.Errorf("dry run: %d budget writes, deletes %+v; want none and one dry-run delete", len(budgets.writes), pods.deletes)
	}
	_, err := evict(newTestEviction(pods, budgets), &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}, &metav1.DeleteOptions{DryRun: []string{"Other"}})
	if err == nil || !strings.Contains(err.Error(), "Non-matching dry-run options in request and content") {
		t.Errorf("two dry-runs: %v", err)
	}
}

func TestEvictionTwoBudgets(t *testing.T) {
	pods, budgets := &fakePods{pod: evictedPod(corev1.PodRunning, true)}, &fakeBudgets{items: []policyv1.PodDisruptionBudget{budget("a", 1), budget("b", 1)}}
	status, err := evict(newTestEviction(pods, budgets), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if status.Code != 500 || status.Status != metav1.StatusFailure || status.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Errorf("status %+v", status)
	}
	if len(pods.deletes) != 0 || len(budgets.writes) != 0 {
		t.Errorf("deleted or spent anyway")
	}
}

// TestEvictionUnhealthyPod: an unready pod goes without spending the budget when the policy
// is AlwaysAllow or the application is healthy without it; it is then deleted only at the
// version judged unready, and a change meanwhile asks the client to retry.
func TestEvictionUnhealthyPod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pdb      policyv1.PodDisruptionBudget
		allowed  bool
		deleteIs error
	}{
		{"AlwaysAllow", budget("web", 0, func(p *policyv1.PodDisruptionBudget) {
			p.Status.CurrentHealthy = 1
			p.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		}), true, nil},
		{"healthy budget", budget("web", 0), true, nil},
		{"unhealthy budget", budget("web", 0, func(p *policyv1.PodDisruptionBudget) { p.Status.CurrentHealthy = 1 }), false, nil},
		{"changed meanwhile", budget("web", 0), false, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, "web-1", errors.New("modified"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := &fakePods{pod: evictedPod(corev1.PodRunning, false), deleteErr: tc.deleteIs}
			budgets := &fakeBudgets{items: []policyv1.PodDisruptionBudget{tc.pdb}}
			_, err := evict(newTestEviction(pods, budgets), nil, nil)
			if tc.allowed != (err == nil) {
				t.Fatalf("evict: %v, want allowed %v", err, tc.allowed)
			}
			if !tc.allowed && !apierrors.IsTooManyRequests(err) {
				t.Errorf("refusal %v, want 429", err)
			}
			if len(budgets.writes) != 0 {
				t.Errorf("an unready pod spent the budget")
			}
			if tc.allowed || tc.deleteIs != nil {
				if len(pods.deletes) != 1 || ptr.Deref(pods.deletes[0].Preconditions.ResourceVersion, "") != "7" {
					t.Errorf("deletes %+v, want one at resourceVersion 7", pods.deletes)
				}
			}
		})
	}
}

func TestEvictionRefusesIgnoreStoreReadError(t *testing.T) {
	pods := &fakePods{pod: evictedPod(corev1.PodRunning, true)}
	_, err := evict(newTestEviction(pods, &fakeBudgets{}), nil, &metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be set for pod eviction") {
		t.Errorf("evict: %v", err)
	}
	if _, err := evict(newTestEviction(&fakePods{}, &fakeBudgets{}), nil, nil); !apierrors.IsNotFound(err) {
		t.Errorf("evicting a missing pod: %v, want NotFound", err)
	}
}
