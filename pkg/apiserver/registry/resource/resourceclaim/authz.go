package resourceclaim

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// This file holds the checks of claims that need more than the object: the namespace's
// consent to admin access, and the writer's permission on the synthetic subresources
// "binding" (allocating, reserving) and "driver" (reporting a device's status).

// AdminAccessAllowed refuses requests for admin access to devices (which may then be in
// use by others) unless the namespace carries the admin-access label. Templates share it.
func AdminAccessAllowed(ctx context.Context, requests []resourcev1.DeviceRequest, namespace string, specPath *field.Path, namespaces NamespaceGetter) field.ErrorList {
	for i, r := range requests {
		if r.Exactly != nil && r.Exactly.AdminAccess != nil && *r.Exactly.AdminAccess {
			return namespaceAllowsAdmin(ctx, namespace, specPath.Child("devices", "requests").Index(i).Child("adminAccess"), namespaces)
		}
	}
	return nil
}

// adminAccessResultsAllowed checks a new allocation with admin access the same way; one
// granted before stays granted.
func adminAccessResultsAllowed(ctx context.Context, claim, old *resourcev1.ResourceClaim, namespaces NamespaceGetter) field.ErrorList {
	if _, granted := adminResult(old.Status.Allocation); granted {
		return nil
	}
	i, requested := adminResult(claim.Status.Allocation)
	if !requested {
		return nil
	}
	p := field.NewPath("status", "allocation", "devices", "results").Index(i).Child("adminAccess")
	return namespaceAllowsAdmin(ctx, claim.Namespace, p, namespaces)
}

func adminResult(a *resourcev1.AllocationResult) (int, bool) {
	if a == nil {
		return 0, false
	}
	for i, r := range a.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			return i, true
		}
	}
	return 0, false
}

func namespaceAllowsAdmin(ctx context.Context, namespace string, fldPath *field.Path, namespaces NamespaceGetter) field.ErrorList {
	ns, err := namespaces(ctx, namespace)
	if err != nil {
		return field.ErrorList{field.InternalError(fldPath, fmt.Errorf("could not retrieve namespace to verify admin access: %w", err))}
	}
	if ns.Labels[resourcev1.DRAAdminNamespaceLabelKey] != "true" {
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf("admin access to devices requires the `%s: true` label on the containing namespace", resourcev1.DRAAdminNamespaceLabelKey))}
	}
	return nil
}

// authorizedForBinding: changing the allocation or the consumers needs the request's verb
// on resourceclaims/binding in all namespaces, as the scheduler has, so that a claim's
// owner cannot allocate devices to itself (DRAResourceClaimGranularStatusAuthorization,
// beta and on in v1.37).
func authorizedForBinding(ctx context.Context, authz authorizer.Authorizer, s, old *resourcev1.ResourceClaimStatus) field.ErrorList {
	fldPath := field.NewPath("status", "allocation")
	if apiequality.Semantic.DeepEqual(s.Allocation, old.Allocation) && apiequality.Semantic.DeepEqual(s.ReservedFor, old.ReservedFor) {
		return nil
	}
	attrs, err := filters.GetAuthorizerAttributes(ctx)
	if err != nil {
		return field.ErrorList{field.InternalError(fldPath, fmt.Errorf("cannot build authorizer attributes: %w", err))}
	}
	binding := &subresourceAttrs{Attributes: attrs, verb: attrs.GetVerb(), subresource: resourcev1.SubresourceBinding}
	if err := authorize(ctx, authz, binding); err != nil {
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf(`changing status.allocation or status.reservedFor requires resource="resourceclaims/binding", verb="%s" permission: %s`, binding.verb, err))}
	}
	return nil
}

// authorizedForDeviceStatus: changing a device's status needs the verb, prefixed
// "arbitrary-node:", on resourceclaims/driver named for the device's driver; a service
// account of the node the claim is allocated on may instead have it "associated-node:".
func authorizedForDeviceStatus(ctx context.Context, authz authorizer.Authorizer, s, old *resourcev1.ResourceClaimStatus) field.ErrorList {
	fldPath := field.NewPath("status", "devices")
	drivers := changedDrivers(s, old)
	if drivers.Len() == 0 {
		return nil
	}
	attrs, err := filters.GetAuthorizerAttributes(ctx)
	if err != nil {
		return field.ErrorList{field.InternalError(fldPath, fmt.Errorf("cannot build authorizer attributes: %w", err))}
	}
	verb := attrs.GetVerb()
	verbs := []string{resourcev1.VerbPrefixArbitraryNode + verb}
	if onAllocatedNode(attrs, s.Allocation) {
		verbs = []string{resourcev1.VerbPrefixAssociatedNode + verb, resourcev1.VerbPrefixArbitraryNode + verb}
	}
	var errs field.ErrorList
	for _, driver := range sets.List(drivers) {
		var first error
		for _, v := range verbs { // any one of them will do
			err := authorize(ctx, authz, &subresourceAttrs{Attributes: attrs, verb: v, subresource: resourcev1.SubresourceDriver, namespace: attrs.GetNamespace(), name: driver})
			if err == nil {
				first = nil
				break
			}
			if first == nil {
				first = err
			}
		}
		if first != nil {
			errs = append(errs, field.Forbidden(fldPath, fmt.Sprintf(`changing status.devices requires resource="resourceclaims/driver", verb="%s" permission: %s`, verbs, first)))
		}
	}
	return errs
}

// changedDrivers are the drivers of device statuses added, changed or removed.
func changedDrivers(s, old *resourcev1.ResourceClaimStatus) sets.Set[string] {
	before := map[string]resourcev1.AllocatedDeviceStatus{}
	for _, d := range old.Devices {
		before[deviceKey(d.Driver, d.Pool, d.Device, d.ShareID)] = d
	}
	drivers := sets.New[string]()
	for _, d := range s.Devices {
		k := deviceKey(d.Driver, d.Pool, d.Device, d.ShareID)
		if o, ok := before[k]; !ok || !apiequality.Semantic.DeepEqual(o, d) {
			drivers.Insert(d.Driver)
		}
		delete(before, k)
	}
	for _, d := range before {
		drivers.Insert(d.Driver)
	}
	return drivers
}

// onAllocatedNode: the writer is a service account bound to the one node the allocation
// selects by name.
func onAllocatedNode(attrs authorizer.Attributes, a *resourcev1.AllocationResult) bool {
	if a == nil || a.NodeSelector == nil || len(a.NodeSelector.NodeSelectorTerms) != 1 {
		return false
	}
	term := a.NodeSelector.NodeSelectorTerms[0]
	if len(term.MatchExpressions) != 0 || len(term.MatchFields) != 1 {
		return false
	}
	f := term.MatchFields[0]
	if f.Key != "metadata.name" || f.Operator != "In" || len(f.Values) != 1 || f.Values[0] == "" {
		return false
	}
	u := attrs.GetUser()
	if u == nil {
		return false
	}
	if _, _, err := serviceaccount.SplitUsername(u.GetName()); err != nil {
		return false
	}
	nodes := u.GetExtra()[serviceaccount.NodeNameKey]
	return len(nodes) == 1 && len(validation.IsDNS1123Subdomain(nodes[0])) == 0 && nodes[0] == f.Values[0]
}

func authorize(ctx context.Context, authz authorizer.Authorizer, attrs authorizer.Attributes) error {
	decision, reason, err := authz.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	msg := reason
	switch {
	case err != nil && reason != "":
		msg = fmt.Sprintf("%v: %s", err, reason)
	case err != nil:
		msg = err.Error()
	}
	return responsewriters.ForbiddenStatusError(attrs, msg)
}

// subresourceAttrs are the request's attributes for a synthetic subresource: cluster-wide
// and unnamed unless set.
type subresourceAttrs struct {
	authorizer.Attributes
	verb, subresource, namespace, name string
}

func (a *subresourceAttrs) GetVerb() string        { return a.verb }
func (a *subresourceAttrs) GetSubresource() string { return a.subresource }
func (a *subresourceAttrs) GetNamespace() string   { return a.namespace }
func (a *subresourceAttrs) GetName() string        { return a.name }
