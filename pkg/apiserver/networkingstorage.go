package apiserver

import (
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/networking/ingress"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/networking/ingressclass"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/networking/networkpolicy"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/networking/servicecidr"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storage/csidriver"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storage/csinode"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storage/csistoragecapacity"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storage/storageclass"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storage/volumeattachment"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storage/volumeattributesclass"
)

// addNetworkingStorageDefaults registers the defaults of networking.k8s.io/v1 (network
// policies, ingress classes; Ingresses have none) and storage.k8s.io/v1 (storage classes,
// CSI drivers). Their kinds are selected by metadata only, which the scheme allows without
// a function.
func addNetworkingStorageDefaults(s *runtime.Scheme) {
	addDefaults(s, networkpolicy.SetDefaults, func(l *networkingv1.NetworkPolicyList) []networkingv1.NetworkPolicy { return l.Items })
	addDefaults(s, ingressclass.SetDefaults, func(l *networkingv1.IngressClassList) []networkingv1.IngressClass { return l.Items })
	addDefaults(s, storageclass.SetDefaults, func(l *storagev1.StorageClassList) []storagev1.StorageClass { return l.Items })
	addDefaults(s, csidriver.SetDefaults, func(l *storagev1.CSIDriverList) []storagev1.CSIDriver { return l.Items })
}

// networkingStorage builds the networking.k8s.io/v1 endpoints: the service network's IP
// addresses and ranges (built earlier, for the Services), Ingresses with their status,
// IngressClasses and NetworkPolicies.
func networkingStorage(getter generic.RESTOptionsGetter, ipAddresses *registry.Resource, serviceCIDRs *servicecidr.Storage) (map[string]rest.Storage, error) {
	ingresses, err := ingress.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	classes, err := ingressclass.NewREST(getter)
	if err != nil {
		return nil, err
	}
	policies, err := networkpolicy.NewREST(getter)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{
		"ipaddresses":         ipAddresses,
		"servicecidrs":        serviceCIDRs.ServiceCIDR,
		"servicecidrs/status": serviceCIDRs.Status,
		"ingresses":           ingresses.Ingress,
		"ingresses/status":    ingresses.Status,
		"ingressclasses":      classes,
		"networkpolicies":     policies,
	}, nil
}

// storageStorage builds the storage.k8s.io/v1 endpoints, as a kube-apiserver serves them by
// default.
func storageStorage(getter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	classes, err := storageclass.NewREST(getter)
	if err != nil {
		return nil, err
	}
	attachments, err := volumeattachment.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	attributesClasses, err := volumeattributesclass.NewREST(getter)
	if err != nil {
		return nil, err
	}
	csiNodes, err := csinode.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	drivers, err := csidriver.NewREST(getter)
	if err != nil {
		return nil, err
	}
	capacities, err := csistoragecapacity.NewREST(getter)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{
		"storageclasses":           classes,
		"volumeattachments":        attachments.VolumeAttachment,
		"volumeattachments/status": attachments.Status,
		"volumeattributesclasses":  attributesClasses,
		"csinodes":                 csiNodes.CSINode,
		"csinodes/status":          csiNodes.Status,
		"csidrivers":               drivers,
		"csistoragecapacities":     capacities,
	}, nil
}
