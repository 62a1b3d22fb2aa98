// Package clusterroleaggregation is berth's clusterrole-aggregation controller, as
// kube-controller-manager runs it. It stands beside the pod's flow as a client of the API
// server and gives RBAC's aggregated ClusterRoles their rules: a ClusterRole with an
// aggregationRule gets the union of the rules of the ClusterRoles its selectors match. That is
// how the bootstrap policy's admin, edit and view fill up (from the system:aggregate-to-*
// roles, edit from view, admin from edit), and how a CRD's author extends them with a
// labelled role of their own.
//
// The controller owns the rules of an aggregated role: it writes them with server-side apply
// as the field manager "clusterrole-aggregation-controller", forcing, so rules an admin put
// into such a role by hand are replaced.
package clusterroleaggregation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// FieldManager is the controller's field manager, kube-controller-manager's.
const FieldManager = "clusterrole-aggregation-controller"

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "clusterrole-aggregation"

// reconcile is one role's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).syncClusterRole

// Controller keeps every aggregated ClusterRole's rules the union of the roles it selects.
// Its queue holds the names of aggregated roles. Since any role's change may change any
// aggregation (the set is small and the selectors may match anything), every change queues
// every aggregated role, as upstream does.
type Controller struct {
	client rbacv1client.ClusterRolesGetter
	roles  rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets a Warning event on a role whose sync panicked.
	Recorder events.EventRecorder
}

// NewController returns a clusterrole-aggregation controller fed by the ClusterRole
// informer. Start the informer and call Run.
func NewController(client rbacv1client.ClusterRolesGetter, roles rbacinformers.ClusterRoleInformer) *Controller {
	c := &Controller{
		client: client,
		roles:  roles.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ClusterRoleAggregator"}),
	}
	registration, _ := roles.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAggregated() },
		UpdateFunc: func(_, _ any) { c.enqueueAggregated() },
		DeleteFunc: func(any) { c.enqueueAggregated() },
	})
	c.synced = registration.HasSynced
	return c
}

func (c *Controller) enqueueAggregated() {
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing cluster roles from the cache: %w", err))
		return
	}
	for _, r := range all {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informer never syncs while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:  controllerName,
		Title: "ClusterRoleAggregator controller",
		Queue: c.queue,
		Sync:  func(ctx context.Context, name string) error { return reconcile(c, ctx, name) },
		Reference: func(name string) *corev1.ObjectReference {
			return &corev1.ObjectReference{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: name}
		},
		Recorder:       c.Recorder,
		KeyName:        "clusterRole",
		FailureMessage: "Aggregating a cluster role failed",
	}
	return w.Run(ctx, workers, c.synced)
}

// syncClusterRole writes the aggregated rules of the role, when they differ from its rules.
func (c *Controller) syncClusterRole(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting cluster role %s from cache: %w", name, err)
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := aggregatedRules(role, c.roles)
	if err != nil {
		return err
	}
	// Semantic equality: no rules and an empty list are the same, so a role that selects
	// nothing is not written.
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	apply := rbacv1ac.ClusterRole(name).WithRules(applyRules(rules)...)
	if _, err := c.client.ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying the aggregated rules of cluster role %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Aggregated the rules of a cluster role", "clusterRole", name, "rules", len(rules))
	return nil
}

// selector is the part of the lister aggregatedRules reads.
type selector interface {
	List(labels.Selector) ([]*rbacv1.ClusterRole, error)
}

// aggregatedRules is the union of the rules of the roles that role's selectors match, in a
// stable order: selector by selector, the matched roles by name, each rule once. The role
// itself is skipped even when it matches its own selector.
func aggregatedRules(role *rbacv1.ClusterRole, roles selector) ([]rbacv1.PolicyRule, error) {
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("cluster role %s's aggregation selector %d: %w", role.Name, i, err)
		}
		matched, err := roles.List(sel)
		if err != nil {
			return nil, fmt.Errorf("listing cluster roles from cache: %w", err)
		}
		slices.SortFunc(matched, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range matched {
			if m.Name == role.Name {
				continue
			}
			for _, r := range m.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

func applyRules(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, len(rules))
	for i, r := range rules {
		out[i] = rbacv1ac.PolicyRule().
			WithVerbs(r.Verbs...).
			WithAPIGroups(r.APIGroups...).
			WithResources(r.Resources...).
			WithResourceNames(r.ResourceNames...).
			WithNonResourceURLs(r.NonResourceURLs...)
	}
	return out
}
