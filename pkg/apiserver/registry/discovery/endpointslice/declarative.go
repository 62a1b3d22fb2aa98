package endpointslice

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The discovery/v1 types declare some of their rules as tags, beta since Kubernetes 1.37:
// addressType is +k8s:required and +k8s:immutable (and its type +k8s:enum), an endpoint's
// addresses +k8s:required and +k8s:maxItems=100. Upstream's strategy runs the code generated
// from them after the handwritten validation, and with the DeclarativeValidationBeta gate on
// (its default since 1.36) their errors replace the handwritten ones they cover. That code
// lives in k8s.io/kubernetes, so the rules are stated here, with apimachinery's own rule
// functions and merge. Two texts a client sees differ from the handwritten ones:
//
//	endpoints[0].addresses: Required value                  (not "...: must contain at least 1 address")
//	addressType: Invalid value: null: field is immutable     (not "...: \"IPv6\": field is immutable")
//
// and these errors come after the others.

// mergeDeclarative is what upstream's merge does with the handwritten errors (every error of
// the request so far): drop those a declared rule's error covers, and repeated ones; then
// append the declared rules' errors.
func mergeDeclarative(ctx context.Context, errs field.ErrorList, s, old *discoveryv1.EndpointSlice) field.ErrorList {
	declared := declaredRuleErrors(ctx, s, old)
	return append(validate.FilterCoveredHandwrittenErrors(ctx, errs, declared, true), declared...)
}

// declaredRuleErrors runs the declared rules on s (old is nil on create) in the order and
// with the short cuts of the generated code: a field an update left unchanged is not
// checked, and addressType's enum is checked only when required and immutable passed.
func declaredRuleErrors(ctx context.Context, s, old *discoveryv1.EndpointSlice) field.ErrorList {
	op := operation.Operation{Type: operation.Create}
	var oldType *discoveryv1.AddressType
	if old != nil {
		op.Type = operation.Update
		oldType = &old.AddressType
	}
	var errs field.ErrorList
	if old == nil || s.AddressType != old.AddressType {
		p := field.NewPath("addressType")
		short := validate.RequiredValue(ctx, op, p, &s.AddressType, oldType)
		short = append(short, validate.Immutable(ctx, op, p, &s.AddressType, oldType)...)
		if len(short) == 0 {
			short = validate.Enum(ctx, op, p, &s.AddressType, oldType, addressTypes, nil)
		}
		errs = append(errs, short...)
	}
	if old == nil || !apiequality.Semantic.DeepEqual(s.Endpoints, old.Endpoints) {
		for i := range s.Endpoints {
			p := field.NewPath("endpoints").Index(i).Child("addresses")
			addrs := s.Endpoints[i].Addresses
			errs = append(errs, validate.RequiredSlice(ctx, op, p, addrs, nil)...)
			errs = append(errs, validate.MaxItems(ctx, op, p, addrs, nil, maxAddresses)...)
		}
	}
	return errs.MarkBeta()
}
