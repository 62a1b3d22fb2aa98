package lease

import (
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func fieldErrorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s", string(e.Type), e.Field))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	slices.Sort(want)
	if got := fieldErrorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %v\nwant %v\nfull: %v", got, want, errs)
	}
}

func leaseForValidation(mutate ...func(*coordinationv1.LeaseSpec)) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease", ResourceVersion: "1"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("node-1"),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            ptr.To(metav1.NewMicroTime(time.Now())),
		},
	}
	for _, m := range mutate {
		m(&l.Spec)
	}
	return l
}

func withStrategy(s string) func(*coordinationv1.LeaseSpec) {
	return func(spec *coordinationv1.LeaseSpec) {
		spec.Strategy = ptr.To(coordinationv1.CoordinatedLeaseStrategy(s))
	}
}

func preferredHolder(h string) func(*coordinationv1.LeaseSpec) {
	return func(spec *coordinationv1.LeaseSpec) { spec.PreferredHolder = &h }
}

func TestValidateLease(t *testing.T) {
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		want  []string
	}{
		{name: "node heartbeat", lease: leaseForValidation()},
		{name: "empty spec", lease: leaseForValidation(func(s *coordinationv1.LeaseSpec) { *s = coordinationv1.LeaseSpec{} })},
		{name: "any holder identity", lease: leaseForValidation(func(s *coordinationv1.LeaseSpec) { s.HolderIdentity = ptr.To("host_1 pid 42") })},
		{name: "zero duration", lease: leaseForValidation(func(s *coordinationv1.LeaseSpec) { s.LeaseDurationSeconds = ptr.To[int32](0) }),
			want: []string{"FieldValueInvalid spec.leaseDurationSeconds"}},
		{name: "zero transitions", lease: leaseForValidation(func(s *coordinationv1.LeaseSpec) { s.LeaseTransitions = ptr.To[int32](0) })},
		{name: "negative transitions", lease: leaseForValidation(func(s *coordinationv1.LeaseSpec) { s.LeaseTransitions = ptr.To[int32](-1) }),
			want: []string{"FieldValueInvalid spec.leaseTransitions"}},
		{name: "known strategy", lease: leaseForValidation(withStrategy(string(coordinationv1.OldestEmulationVersion)), preferredHolder("a"))},
		{name: "custom strategy", lease: leaseForValidation(withStrategy("example.com/Newest"))},
		{name: "unknown built-in strategy", lease: leaseForValidation(withStrategy("Newest")),
			want: []string{"FieldValueNotSupported spec.strategy.strategy"}},
		{name: "empty strategy", lease: leaseForValidation(withStrategy("")),
			want: []string{"FieldValueNotSupported spec.strategy.strategy"}},
		{name: "bad custom strategy", lease: leaseForValidation(withStrategy("example.com/a b")),
			want: []string{"FieldValueInvalid spec.strategy.strategy"}},
		{name: "preferred holder without strategy", lease: leaseForValidation(preferredHolder("a")),
			want: []string{"FieldValueForbidden spec.preferredHolder"}},
		{name: "empty preferred holder without strategy", lease: leaseForValidation(preferredHolder(""))},
		{name: "bad name", lease: func() *coordinationv1.Lease { l := leaseForValidation(); l.Name = "Node_1"; return l }(),
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "no namespace", lease: func() *coordinationv1.Lease { l := leaseForValidation(); l.Namespace = ""; return l }(),
			want: []string{"FieldValueRequired metadata.namespace"}},
		{name: "unqualified finalizer is allowed on leases", lease: func() *coordinationv1.Lease {
			l := leaseForValidation()
			l.Finalizers = []string{"mine"}
			return l
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateLease(tc.lease), tc.want)
		})
	}
}

func TestValidateLeaseUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *coordinationv1.Lease
		want     []string
	}{
		{name: "renew", old: leaseForValidation(), new: leaseForValidation(func(s *coordinationv1.LeaseSpec) {
			s.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(time.Second)))
		})},
		{name: "take over", old: leaseForValidation(), new: leaseForValidation(func(s *coordinationv1.LeaseSpec) {
			s.HolderIdentity = ptr.To("node-2")
			s.LeaseTransitions = ptr.To[int32](1)
		})},
		{name: "bad new spec", old: leaseForValidation(), new: leaseForValidation(func(s *coordinationv1.LeaseSpec) { s.LeaseDurationSeconds = ptr.To[int32](-5) }),
			want: []string{"FieldValueInvalid spec.leaseDurationSeconds"}},
		{name: "rename", old: leaseForValidation(), new: func() *coordinationv1.Lease { l := leaseForValidation(); l.Name = "node-2"; return l }(),
			want: []string{"FieldValueInvalid metadata.name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateLeaseUpdate(tc.new, tc.old), tc.want)
		})
	}
}
