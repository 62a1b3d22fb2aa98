// Package rbacbootstrap is the API server's "rbac/bootstrap-roles" post-start hook, as
// kube-apiserver runs it: once the server listens, it reconciles the bootstrap policy
// (pkg/auth/rbac/bootstrappolicy) through the loopback client before any component that
// relies on the default roles can be authorized. Missing roles and bindings are created; an
// existing one whose rbac.authorization.kubernetes.io/autoupdate annotation is not "false"
// gets the rules, aggregation selectors, subjects, labels and annotations it lacks; nothing
// is ever removed, so an admin's additions stay. Until every object is reconciled /healthz,
// /livez and /readyz report "poststarthook/rbac/bootstrap-roles failed", and the hook tries
// again every second.
//
// Unlike kube-apiserver, which gives up after 30 s and exits, the hook keeps trying until the
// server stops: `berth up` runs etcd, the API server and the node agent in one process, and
// an etcd that is slow to come up must not take them all down (it still shows in /readyz).
//
// kube-apiserver also migrates pre-1.9 admin/edit/view rules into the aggregate-to-* roles
// and splits a pre-1.14 system:discovery binding; berth never stored either, so it does not.
package rbacbootstrap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbacv1listers "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// HookName is the post-start hook's name, kube-apiserver's; health checks show it as
// poststarthook/rbac/bootstrap-roles.
const HookName = "rbac/bootstrap-roles"

// component names the hook in berth_recovered_panics_total.
const component = "rbac-bootstrap"

// retryInterval is how long the hook waits between two attempts; a variable for tests.
var retryInterval = time.Second

// Client is what the reconcile writes through: the RBAC API, and namespaces, which a
// namespaced role's reconcile creates when they are missing.
type Client interface {
	RbacV1() rbacv1client.RbacV1Interface
	CoreV1() corev1client.CoreV1Interface
}

// PostStartHook returns the hook that reconciles policy through the server's loopback client.
// It returns once everything is reconciled, or when the server stops.
func PostStartHook(policy bootstrappolicy.Policy) genericapiserver.PostStartHookFunc {
	return func(hookCtx genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(hookCtx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("the %s hook's loopback client: %w", HookName, err)
		}
		ctx := klog.NewContext(hookCtx, klog.LoggerWithName(klog.FromContext(hookCtx), component))
		run(ctx, client, policy)
		return nil
	}
}

// WaitCached returns once the authorizer's cache holds every cluster role binding and cluster
// role of policy, or when ctx ends: the hook's end is when /readyz turns ready, and a
// client that comes then (a node agent, a pod's token) must not meet a 403 the next watch
// event would have lifted.
func WaitCached(ctx context.Context, roles rbacv1listers.ClusterRoleLister, bindings rbacv1listers.ClusterRoleBindingLister, policy bootstrappolicy.Policy) error {
	return wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, r := range policy.ClusterRoles {
			if _, err := roles.Get(r.Name); err != nil {
				return false, nil
			}
		}
		for _, b := range policy.ClusterRoleBindings {
			if _, err := bindings.Get(b.Name); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// run tries Ensure every retryInterval until it succeeds or ctx ends. A panic in one attempt
// (a bad object from a client library) costs that attempt only.
func run(ctx context.Context, client Client, policy bootstrappolicy.Policy) {
	logger := klog.FromContext(ctx)
	_ = wait.PollUntilContextCancel(ctx, retryInterval, true, func(ctx context.Context) (bool, error) {
		err := panics.Call(ctx, component, func() error { return Ensure(ctx, client, policy) })
		if err != nil {
			if ctx.Err() == nil {
				logger.Error(err, "Reconciling the bootstrap RBAC policy failed; retrying", "after", retryInterval)
			}
			return false, nil
		}
		logger.V(2).Info("Reconciled the bootstrap RBAC policy")
		return true, nil
	})
}

// Ensure reconciles every object of policy once. It goes on past a failed object, so that
// as much as possible is in place, and returns the failures joined.
func Ensure(ctx context.Context, client Client, policy bootstrappolicy.Policy) error {
	rbac := client.RbacV1()
	// The storage answers before anything is written, or this attempt is over.
	if _, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing clusterroles: %w", err)
	}
	if _, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing clusterrolebindings: %w", err)
	}

	var errs []error
	for i := range policy.ClusterRoles {
		role := policy.ClusterRoles[i].DeepCopy()
		errs = append(errs, reconcileRole(ctx, "clusterrole", role.Name, reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: role},
			Client:  reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()},
			Confirm: true,
		}))
	}
	for i := range policy.ClusterRoleBindings {
		binding := policy.ClusterRoleBindings[i].DeepCopy()
		errs = append(errs, reconcileBinding(ctx, "clusterrolebinding", binding.Name, reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: binding},
			Client:      reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()},
			Confirm:     true,
		}))
	}
	for _, ns := range sortedKeys(policy.Roles) {
		for i := range policy.Roles[ns] {
			role := policy.Roles[ns][i].DeepCopy()
			errs = append(errs, reconcileRole(ctx, "role", ns+"/"+role.Name, reconciliation.ReconcileRoleOptions{
				Role:    reconciliation.RoleRuleOwner{Role: role},
				Client:  reconciliation.RoleModifier{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()},
				Confirm: true,
			}))
		}
	}
	for _, ns := range sortedKeys(policy.RoleBindings) {
		for i := range policy.RoleBindings[ns] {
			binding := policy.RoleBindings[ns][i].DeepCopy()
			errs = append(errs, reconcileBinding(ctx, "rolebinding", ns+"/"+binding.Name, reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: binding},
				Client:      reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()},
				Confirm:     true,
			}))
		}
	}
	return errors.Join(errs...)
}

// retriable are the errors a reconcile is run again for at once: a write that raced another
// (a restarting replica, the aggregation controller), or a server still starting up.
func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
}

func reconcileRole(ctx context.Context, kind, name string, opts reconciliation.ReconcileRoleOptions) error {
	logger := klog.FromContext(ctx)
	err := retry.OnError(retry.DefaultBackoff, retriable, func() error {
		result, err := opts.Run()
		if err != nil {
			return err
		}
		switch {
		case result.Protected && result.Operation != reconciliation.ReconcileNone:
			logger.Info("Skipped a reconcile-protected role with missing permissions", "kind", kind, "name", name, "missingRules", result.MissingRules)
		case result.Operation == reconciliation.ReconcileUpdate:
			logger.V(2).Info("Updated a role with additional permissions", "kind", kind, "name", name, "missingRules", result.MissingRules)
		case result.Operation == reconciliation.ReconcileCreate:
			logger.V(2).Info("Created a role", "kind", kind, "name", name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconciling %s.%s/%s: %w", kind, rbacv1.GroupName, name, err)
	}
	return nil
}

func reconcileBinding(ctx context.Context, kind, name string, opts reconciliation.ReconcileRoleBindingOptions) error {
	logger := klog.FromContext(ctx)
	err := retry.OnError(retry.DefaultBackoff, retriable, func() error {
		result, err := opts.Run()
		if err != nil {
			return err
		}
		switch {
		case result.Protected && result.Operation != reconciliation.ReconcileNone:
			logger.Info("Skipped a reconcile-protected binding with missing subjects", "kind", kind, "name", name, "missingSubjects", result.MissingSubjects)
		case result.Operation == reconciliation.ReconcileUpdate:
			logger.V(2).Info("Updated a binding with additional subjects", "kind", kind, "name", name, "missingSubjects", result.MissingSubjects)
		case result.Operation == reconciliation.ReconcileCreate:
			logger.V(2).Info("Created a binding", "kind", kind, "name", name)
		case result.Operation == reconciliation.ReconcileRecreate:
			// A binding's roleRef cannot change in place: it was deleted and created again.
			logger.V(2).Info("Recreated a binding", "kind", kind, "name", name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconciling %s.%s/%s: %w", kind, rbacv1.GroupName, name, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
