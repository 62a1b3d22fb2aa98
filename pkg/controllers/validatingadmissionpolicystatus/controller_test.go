package validatingadmissionpolicystatus

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakeChecker []admissionregistrationv1.ExpressionWarning

func (f fakeChecker) Check(*admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
	return f
}

func TestStatus(t *testing.T) {
	warn := fakeChecker{{FieldRef: "spec.validations[0].expression", Warning: "no such key: replicas"}}
	for _, tc := range []struct {
		name             string
		generation, seen int64
		checker          fakeChecker
		wantNil          bool
		wantWarnings     int
		wantObservedGen  int64
	}{
		{name: "new generation with a warning", generation: 2, seen: 1, checker: warn, wantWarnings: 1, wantObservedGen: 2},
		{name: "new generation, clean", generation: 1, seen: 0, wantWarnings: 0, wantObservedGen: 1},
		{name: "generation already checked", generation: 3, seen: 3, checker: warn, wantNil: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: tc.generation},
				Status:     admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: tc.seen},
			}
			got := Status(p, tc.checker)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("Status = %+v, want nil", got)
				}
				return
			}
			if got == nil || *got.ObservedGeneration != tc.wantObservedGen {
				t.Fatalf("Status = %+v, want observedGeneration %d", got, tc.wantObservedGen)
			}
			if got.TypeChecking == nil || len(got.TypeChecking.ExpressionWarnings) != tc.wantWarnings {
				t.Fatalf("warnings %+v, want %d", got.TypeChecking, tc.wantWarnings)
			}
			if tc.wantWarnings > 0 && *got.TypeChecking.ExpressionWarnings[0].Warning != "no such key: replicas" {
				t.Errorf("warning %q", *got.TypeChecking.ExpressionWarnings[0].Warning)
			}
		})
	}
}
