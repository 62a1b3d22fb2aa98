// Package resourceclaim is the registry of resource.k8s.io/v1 ResourceClaims: their
// defaults, strategy, table and storage, and the status subresource. A claim asks for
// devices (of a class, chosen by selectors and constraints); the scheduler writes the
// allocation into its status and reserves it for the pods that use it, and drivers report
// the devices' state there.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for /apis/resource.k8s.io/v1/resourceclaims and its status,
// including the checks upstream makes there with the namespace and the authorizer: admin
// access needs a namespace labelled for it, and writing an allocation or a device's
// status needs permission on a synthetic subresource (authz.go).
package resourceclaim

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NamespaceGetter reads a namespace, for its admin-access label.
type NamespaceGetter func(ctx context.Context, name string) (*corev1.Namespace, error)

// Storage holds the endpoints of ResourceClaims.
type Storage struct {
	ResourceClaim *registry.Resource
	Status        *registry.SubresourceREST
}

// NewStorage returns the resourceclaims and resourceclaims/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter, namespaces NamespaceGetter, authz authorizer.Authorizer) (*Storage, error) {
	s := &strategy{Strategy: registry.Base, namespaces: namespaces}
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       resourcev1.Resource("resourceclaims"),
		Singular:       "resourceclaim",
		New:            func() runtime.Object { return &resourcev1.ResourceClaim{} },
		NewList:        func() runtime.Object { return &resourcev1.ResourceClaimList{} },
		Strategy:       s,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		ResourceClaim: &registry.Resource{Store: store},
		Status:        registry.NewSubresourceREST(store, &statusStrategy{strategy: s, authz: authz}),
	}, nil
}

// SetDefaults defaults each request as upstream's v1 does: exactly one device
// (ExactCount, count 1) unless the request says otherwise.
func SetDefaults(claim *resourcev1.ResourceClaim) {
	SetSpecDefaults(&claim.Spec)
}

// SetSpecDefaults defaults a claim's spec; templates share it.
func SetSpecDefaults(spec *resourcev1.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			defaultMode(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			defaultMode(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}

func defaultMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

// strategy is the create, update and delete strategy of ResourceClaims. The main resource
// never writes status, and the spec is fixed at creation.
type strategy struct {
	registry.Strategy
	namespaces NamespaceGetter
}

func (*strategy) NamespaceScoped() bool { return true }

func (*strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	claim := obj.(*resourcev1.ResourceClaim)
	claim.Status = resourcev1.ResourceClaimStatus{}
	validation.DropAlphaClaimFields(&claim.Spec, nil)
}

func (*strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	claim, oldClaim := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	claim.Status = oldClaim.Status
	validation.DropAlphaClaimFields(&claim.Spec, &oldClaim.Spec)
}

func (s *strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	claim := obj.(*resourcev1.ResourceClaim)
	errs := AdminAccessAllowed(ctx, claim.Spec.Devices.Requests, claim.Namespace, field.NewPath("spec"), s.namespaces)
	return append(errs, validation.ValidateClaim(ctx, claim, nil)...)
}

func (*strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClaim(ctx, obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim))
}

func (*strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(resourcev1.SchemeGroupVersion, "status")
}

// statusStrategy is the update strategy of resourceclaims/status: only status changes.
// Devices dropped from the allocation lose their reported status with it.
type statusStrategy struct {
	*strategy
	authz authorizer.Authorizer
}

func (*statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	claim, oldClaim := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	claim.Spec = oldClaim.Spec
	metav1.ResetObjectMetaForStatus(&claim.ObjectMeta, &oldClaim.ObjectMeta)
	validation.DropAlphaStatusFields(&claim.Status, &oldClaim.Status)
	dropDeallocatedDevices(claim, oldClaim)
}

func (s *statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	claim, oldClaim := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	errs := adminAccessResultsAllowed(ctx, claim, oldClaim, s.namespaces)
	errs = append(errs, authorizedForBinding(ctx, s.authz, &claim.Status, &oldClaim.Status)...)
	if claim.Status.Allocation != nil {
		errs = append(errs, authorizedForDeviceStatus(ctx, s.authz, &claim.Status, &oldClaim.Status)...)
	}
	return append(errs, validation.ValidateClaimStatus(ctx, claim, oldClaim)...)
}

func (*statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(resourcev1.SchemeGroupVersion, "metadata", "spec")
}

// dropDeallocatedDevices removes the status of devices the old allocation had and the
// new one has not: a deallocated device's state is no longer the claim's.
func dropDeallocatedDevices(claim, old *resourcev1.ResourceClaim) {
	if old.Status.Allocation == nil {
		return
	}
	gone := map[string]bool{}
	for _, r := range old.Status.Allocation.Devices.Results {
		gone[deviceKey(r.Driver, r.Pool, r.Device, (*string)(r.ShareID))] = true
	}
	if a := claim.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			delete(gone, deviceKey(r.Driver, r.Pool, r.Device, (*string)(r.ShareID)))
		}
	}
	kept := claim.Status.Devices[:0]
	for _, d := range claim.Status.Devices {
		if !gone[deviceKey(d.Driver, d.Pool, d.Device, d.ShareID)] {
			kept = append(kept, d)
		}
	}
	claim.Status.Devices = kept
}

func deviceKey(driver, pool, device string, shareID *string) string {
	parts := []string{driver, pool, device}
	if shareID != nil {
		parts = append(parts, *shareID)
	}
	return strings.Join(parts, "/")
}

// Fields are the fields ResourceClaims can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*resourcev1.ResourceClaim).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get resourceclaims`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*resourcev1.ResourceClaim] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
		table.AgeColumn(),
	}, func(c *resourcev1.ResourceClaim, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{c.Name, State(c), table.Age(c, now)}}
	})
}

// State summarizes a claim as kubectl prints it: "pending" until allocated, then
// "allocated" and "reserved" once pods use it, led by "deleted" while it goes.
func State(c *resourcev1.ResourceClaim) string {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	switch {
	case c.Status.Allocation != nil:
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	case c.DeletionTimestamp == nil:
		states = append(states, "pending")
	}
	return strings.Join(states, ",")
}
