// Package validatingadmissionpolicystatus is kube-controller-manager's controller of that
// name: it type-checks each ValidatingAdmissionPolicy's CEL expressions against the types
// the policy matches (and its paramKind) and publishes what it found in
// status.typeChecking.expressionWarnings, with status.observedGeneration, so that `kubectl
// get validatingadmissionpolicy -o yaml` tells an author about an expression that can never
// hold before a request meets it. The checking is k8s.io/apiserver's TypeChecker, the one
// kube-controller-manager uses; the types come from berth's OpenAPI definitions and, for
// custom resources, from the API server's discovery and OpenAPI documents.
package validatingadmissionpolicystatus

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	informers "k8s.io/client-go/informers/admissionregistration/v1"
	clientv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	listers "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// Name is the controller's name, and the field manager of the status it applies.
const Name = "validatingadmissionpolicy-status"

// Checker finds the type errors of a policy's expressions.
type Checker interface {
	Check(*admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning
}

var _ Checker = &validatingpolicy.TypeChecker{}

// Controller keeps the policies' typeChecking status.
type Controller struct {
	policies listers.ValidatingAdmissionPolicyLister
	synced   cache.InformerSynced
	client   clientv1.ValidatingAdmissionPoliciesGetter
	checker  Checker
	queue    workqueue.TypedRateLimitingInterface[string]
}

// NewController returns the controller over informer's policies; Run starts it.
func NewController(informer informers.ValidatingAdmissionPolicyInformer, client clientv1.ValidatingAdmissionPoliciesGetter, checker Checker) (*Controller, error) {
	c := &Controller{
		policies: informer.Lister(),
		client:   client,
		checker:  checker,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name}),
	}
	enqueue := func(obj any) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			c.queue.Add(p.Name)
		}
	}
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

// Run checks policies with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           Name,
		Queue:          c.queue,
		Sync:           c.sync,
		KeyName:        "validatingAdmissionPolicy",
		FailureMessage: "Updating a ValidatingAdmissionPolicy's type checking",
	}
	return w.Run(ctx, workers, c.synced)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	policy, err := c.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	status := Status(policy, c.checker)
	if status == nil {
		return nil
	}
	apply := applyv1.ValidatingAdmissionPolicy(policy.Name).WithStatus(status)
	_, err = c.client.ValidatingAdmissionPolicies().ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: Name, Force: true})
	return err
}

// Status is the status a policy needs published: its type-checking warnings at its current
// generation, or nil when the generation was checked already.
func Status(policy *admissionregistrationv1.ValidatingAdmissionPolicy, checker Checker) *applyv1.ValidatingAdmissionPolicyStatusApplyConfiguration {
	if policy.Generation <= policy.Status.ObservedGeneration {
		return nil
	}
	warnings := []*applyv1.ExpressionWarningApplyConfiguration{}
	for _, w := range checker.Check(policy) {
		warnings = append(warnings, applyv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	return applyv1.ValidatingAdmissionPolicyStatus().
		WithObservedGeneration(policy.Generation).
		WithTypeChecking(applyv1.TypeChecking().WithExpressionWarnings(warnings...))
}
