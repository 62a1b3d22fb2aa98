package prioritylevelconfiguration

import (
	"context"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// The flowcontrol/v1 types declare their unions as tags, beta since Kubernetes 1.36: a
// level's type is +k8s:required and discriminates exempt and limited (each allowed only
// under its own type, limited required under "Limited"), and a limit response's type is
// +k8s:required and discriminates queuing (required under "Queue", forbidden otherwise).
// Upstream's strategy runs the code generated from them after the handwritten validation,
// and with the DeclarativeValidationBeta gate on (its default) their errors replace the
// handwritten ones they cover. That code lives in k8s.io/kubernetes, so the rules are stated
// here with apimachinery's rule functions and merge. What a client sees differs from the
// handwritten texts:
//
//	spec.limited: Forbidden                          (not "...: must be nil if the type is not Limited")
//	spec.limited: Required value                     (not "...: must not be empty when type is Limited")
//	spec.limited.limitResponse.queuing: Required value
//
// and these errors come after the others.

// mergeDeclarative is what upstream's merge does with the handwritten errors (every error of
// the request so far): drop those a declared rule's error covers; then append the declared
// rules' errors.
func mergeDeclarative(ctx context.Context, errs field.ErrorList, pl, old *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	if !utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta) {
		return errs // the declared rules are only compared, and the handwritten errors stand
	}
	declared := declaredRuleErrors(ctx, pl, old)
	return append(validate.FilterCoveredHandwrittenErrors(ctx, errs, declared, true), declared...)
}

// declaredRuleErrors runs the declared rules on pl (old is nil on create) in the order and
// with the ratcheting of the generated code: a part of the spec an update left unchanged is
// not checked again.
func declaredRuleErrors(ctx context.Context, pl, old *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	op := operation.Operation{Type: operation.Create}
	var oldSpec *flowcontrolv1.PriorityLevelConfigurationSpec
	if old != nil {
		op.Type = operation.Update
		oldSpec = &old.Spec
		if apiequality.Semantic.DeepEqual(pl.Spec, old.Spec) {
			return nil
		}
	}
	spec, p := &pl.Spec, field.NewPath("spec")
	var errs field.ErrorList
	typeChanged := oldSpec == nil || oldSpec.Type != spec.Type
	// The exempt member: optional under "Exempt", forbidden otherwise.
	if typeChanged || !apiequality.Semantic.DeepEqual(spec.Exempt, oldSpec.Exempt) {
		if spec.Type != flowcontrolv1.PriorityLevelEnablementExempt {
			errs = append(errs, validate.ForbiddenPointer(ctx, op, p.Child("exempt"), spec.Exempt, nil)...)
		}
	}
	// The limited member: required under "Limited", forbidden otherwise.
	if typeChanged || !apiequality.Semantic.DeepEqual(spec.Limited, oldSpec.Limited) {
		if spec.Type == flowcontrolv1.PriorityLevelEnablementLimited {
			errs = append(errs, validate.RequiredPointer(ctx, op, p.Child("limited"), spec.Limited, nil)...)
		} else {
			errs = append(errs, validate.ForbiddenPointer(ctx, op, p.Child("limited"), spec.Limited, nil)...)
		}
	}
	if typeChanged {
		errs = append(errs, validate.RequiredValue(ctx, op, p.Child("type"), &spec.Type, nil)...)
	}
	if spec.Limited != nil && (oldSpec == nil || !apiequality.Semantic.DeepEqual(&spec.Limited.LimitResponse, limitResponse(oldSpec))) {
		errs = append(errs, limitResponseRuleErrors(ctx, op, &spec.Limited.LimitResponse, p.Child("limited", "limitResponse"))...)
	}
	return errs.MarkBeta()
}

// limitResponseRuleErrors: the queuing member is required under "Queue" and forbidden
// otherwise, and the type is required.
func limitResponseRuleErrors(ctx context.Context, op operation.Operation, lr *flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if lr.Type == flowcontrolv1.LimitResponseTypeQueue {
		errs = append(errs, validate.RequiredPointer(ctx, op, p.Child("queuing"), lr.Queuing, nil)...)
	} else {
		errs = append(errs, validate.ForbiddenPointer(ctx, op, p.Child("queuing"), lr.Queuing, nil)...)
	}
	return append(errs, validate.RequiredValue(ctx, op, p.Child("type"), &lr.Type, nil)...)
}

func limitResponse(spec *flowcontrolv1.PriorityLevelConfigurationSpec) *flowcontrolv1.LimitResponse {
	if spec.Limited == nil {
		return nil
	}
	return &spec.Limited.LimitResponse
}
