package evaluator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

var serviceCount = generic.ObjectCountQuotaResourceNameFor(corev1.Resource("services"))

var serviceResources = []corev1.ResourceName{
	serviceCount, corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// serviceEvaluator charges services: their count, load balancers and node ports.
type serviceEvaluator struct {
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = &serviceEvaluator{}

func (*serviceEvaluator) GroupResource() schema.GroupResource { return corev1.Resource("services") }

func (*serviceEvaluator) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// Handles creates and updates: an update may change the type, and with it the node ports and
// load balancers.
func (*serviceEvaluator) Handles(a admission.Attributes) bool {
	return a.GetSubresource() == "" && (a.GetOperation() == admission.Create || a.GetOperation() == admission.Update)
}

func (e *serviceEvaluator) Matches(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	return generic.Matches(q, obj, e.MatchingResources, generic.MatchesNoScopeFunc)
}

func (*serviceEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	return quota.Intersection(input, serviceResources)
}

func (*serviceEvaluator) MatchingScopes(runtime.Object, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return []corev1.ScopedResourceSelectorRequirement{}, nil
}

func (*serviceEvaluator) UncoveredQuotaScopes(_, _ []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return []corev1.ScopedResourceSelectorRequirement{}, nil
}

func (*serviceEvaluator) Usage(obj runtime.Object) (corev1.ResourceList, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return corev1.ResourceList{}, fmt.Errorf("expect *v1.Service, got %T", obj)
	}
	return ServiceUsage(svc), nil
}

func (e *serviceEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, e.list, generic.MatchesNoScopeFunc, e.Usage)
}

// ServiceUsage is what svc uses: one service; a NodePort service a node port per port; a
// LoadBalancer one load balancer and a node port per port, or, with node-port allocation
// off, per port that names one. Node ports are counted from the spec's intent, since a new
// service has none allocated yet.
func ServiceUsage(svc *corev1.Service) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	result := corev1.ResourceList{
		serviceCount:                         one,
		corev1.ResourceServices:              one,
		corev1.ResourceServicesLoadBalancers: {Format: resource.DecimalSI},
		corev1.ResourceServicesNodePorts:     {Format: resource.DecimalSI},
	}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		result[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		result[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		result[corev1.ResourceServicesLoadBalancers] = one
	}
	return result
}

// QuotaServiceType is the type of svc as quota sees it: NodePort, LoadBalancer, or "" for
// the types that use neither node ports nor load balancers.
func QuotaServiceType(svc *corev1.Service) corev1.ServiceType {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		return svc.Spec.Type
	}
	return ""
}
