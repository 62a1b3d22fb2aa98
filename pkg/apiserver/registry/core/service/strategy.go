package service

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of Services.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// AllowCreateOnUpdate: a PUT may create a Service, as kube-apiserver allows.
func (strategy) AllowCreateOnUpdate(context.Context) bool { return true }

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

// PrepareForCreate: the status is the load balancer's to write.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*corev1.Service).Status = corev1.ServiceStatus{}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	svc.Status = oldSvc.Status
	dropTypeDependentFields(svc, oldSvc)
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateService(obj.(*corev1.Service))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateServiceUpdate(obj.(*corev1.Service), old.(*corev1.Service))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return Warnings(obj.(*corev1.Service))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return Warnings(obj.(*corev1.Service))
}

// defaultOnRead drops what an ExternalName Service cannot have but may carry from its
// earlier type (internalTrafficPolicy), as kube-apiserver does when it reads one.
func defaultOnRead(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Service:
		defaultServiceOnRead(o)
	case *corev1.ServiceList:
		for i := range o.Items {
			defaultServiceOnRead(&o.Items[i])
		}
	}
}

func defaultServiceOnRead(svc *corev1.Service) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		svc.Spec.InternalTrafficPolicy = nil
	}
}

// dropTypeDependentFields clears, on a change of type, the fields the new type may not have
// that the client left as they were (a `kubectl patch` of only spec.type from NodePort to
// ClusterIP keeps the node ports in the body; they go, as kube-apiserver drops them).
func dropTypeDependentFields(svc, old *corev1.Service) {
	if old.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.Type == corev1.ServiceTypeExternalName {
		if old.Spec.ClusterIP == svc.Spec.ClusterIP && sameStrings(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if sameFamilies(old.Spec.IPFamilies, svc.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if policyOf(old) == policyOf(svc) {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePort(old) && !needsNodePort(svc) && nodePortsSubset(svc, old) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheck(old) && !needsHealthCheck(svc) && old.Spec.HealthCheckNodePort == svc.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if o, n := old.Spec.AllocateLoadBalancerNodePorts, svc.Spec.AllocateLoadBalancerNodePorts; o != nil && n != nil && *o == *n {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if o, n := old.Spec.LoadBalancerClass, svc.Spec.LoadBalancerClass; (o == nil) == (n == nil) && (o == nil || *o == *n) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && old.Spec.ExternalTrafficPolicy == svc.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

func policyOf(svc *corev1.Service) corev1.IPFamilyPolicy {
	if svc.Spec.IPFamilyPolicy == nil {
		return ""
	}
	return *svc.Spec.IPFamilyPolicy
}

// nodePortsSubset: svc names no node port old did not hold.
func nodePortsSubset(svc, old *corev1.Service) bool {
	held := nodePorts(old)
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !slices.Contains(held, int(p.NodePort)) {
			return false
		}
	}
	return true
}

// externallyAccessible: reached from outside the cluster (node ports, a load balancer,
// external IPs), so that externalTrafficPolicy applies.
func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of services/status: only the status changes.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec")
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Service).Spec = old.(*corev1.Service).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateServiceStatusUpdate(obj.(*corev1.Service), old.(*corev1.Service))
}

func (statusStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return StatusWarnings(obj.(*corev1.Service))
}
