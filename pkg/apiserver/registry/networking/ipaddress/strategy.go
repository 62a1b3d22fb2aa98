package ipaddress

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of IP addresses. An address has no
// status, and its name is never generated: a generateName is taken as the name itself,
// which then passes validation only if it is an address.
var Strategy = strategy{registry.Strategy{ObjectTyper: registry.Base.ObjectTyper, NameGenerator: keepName{}}}

// keepName is the name generator of IP addresses: a random suffix can never make an
// address.
type keepName struct{}

func (keepName) GenerateName(base string) string { return base }

func (strategy) NamespaceScoped() bool                                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateIPAddress(obj.(*networkingv1.IPAddress))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	ip := obj.(*networkingv1.IPAddress)
	return append(ValidateIPAddress(ip), ValidateIPAddressUpdate(ip, old.(*networkingv1.IPAddress))...)
}

// Fields are the fields an IP address can be selected by: its name.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*networkingv1.IPAddress).ObjectMeta, false)
}
