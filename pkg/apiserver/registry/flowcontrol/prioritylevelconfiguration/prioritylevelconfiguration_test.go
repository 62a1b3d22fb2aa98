package prioritylevelconfiguration

import (
	"context"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func limited(name string, mutate ...func(*flowcontrolv1.PriorityLevelConfiguration)) *flowcontrolv1.PriorityLevelConfiguration {
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{},
				},
			},
		},
	}
	for _, m := range mutate {
		m(pl)
	}
	return pl
}

func TestSetDefaults(t *testing.T) {
	pl := limited("x")
	SetDefaults(pl)
	l := pl.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 {
		t.Errorf("limited defaults %d shares, %d%% lendable; want 30, 0", *l.NominalConcurrencyShares, *l.LendablePercent)
	}
	if q := l.LimitResponse.Queuing; q.Queues != 64 || q.HandSize != 8 || q.QueueLengthLimit != 50 {
		t.Errorf("queuing defaults %+v, want 64 queues, hand 8, length 50", q)
	}

	// v1 keeps an explicit 0: a level that only borrows.
	zero := limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(0))
	})
	SetDefaults(zero)
	if *zero.Spec.Limited.NominalConcurrencyShares != 0 {
		t.Errorf("explicit 0 shares became %d", *zero.Spec.Limited.NominalConcurrencyShares)
	}

	exempt := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{}}}
	SetDefaults(exempt)
	if *exempt.Spec.Exempt.NominalConcurrencyShares != 0 || *exempt.Spec.Exempt.LendablePercent != 0 {
		t.Errorf("exempt defaults %+v, want 0 and 0", exempt.Spec.Exempt)
	}
}

// The bootstrap objects are written as defaulting leaves them, which the mandatory objects'
// validation and the producer's comparisons rely on.
func TestBootstrapObjectsAreDefaultedAndValid(t *testing.T) {
	for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration(nil), bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
		d := pl.DeepCopy()
		SetDefaults(d)
		if !apiequality.Semantic.DeepEqual(d, pl) {
			t.Errorf("defaulting changes %s", pl.Name)
		}
		if errs := Validate(d); len(errs) > 0 {
			t.Errorf("%s: %v", pl.Name, errs)
		}
	}
}

func TestValidate(t *testing.T) {
	catchAll := bootstrap.MandatoryPriorityLevelConfigurationCatchAll
	exempt := bootstrap.MandatoryPriorityLevelConfigurationExempt
	for _, tc := range []struct {
		name string
		pl   *flowcontrolv1.PriorityLevelConfiguration
		want []string // after the declarative merge; nil means valid
	}{
		{"valid", limited("ok"), nil},
		{"zero shares", limited("ok", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(0))
		}), nil},
		{"negative shares", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(-1))
		}), []string{"spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer"}},
		{"lendable over 100", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LendablePercent = ptr.To(int32(101))
		}), []string{"spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive"}},
		{"negative borrowing", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.BorrowingLimitPercent = ptr.To(int32(-1))
		}), []string{"spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer"}},
		{"hand bigger than deck", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = 65
		}), []string{"spec.limited.limitResponse.queuing.handSize: Invalid value: 65: should not be greater than queues (64)"}},
		{"too much entropy", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.Queues = 10000000
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = 100
		}), []string{"spec.limited.limitResponse.queuing.handSize: Invalid value: 100: required entropy bits of deckSize 10000000 and handSize 100 should not be greater than 60"}},
		{"too many queues", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.Queues = 10000001
		}), []string{"spec.limited.limitResponse.queuing.queues: Invalid value: 10000001: must not be greater than 10000000"}},
		{"negative queue length", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.QueueLengthLimit = -1
		}), []string{"spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive"}},
		{"queuing under reject", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}), []string{"spec.limited.limitResponse.queuing: Forbidden"}},
		{"queue without queuing", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing = nil
		}), []string{"spec.limited.limitResponse.queuing: Required value"}},
		{"bad limit response", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: "Drop"}
		}), []string{`spec.limited.limitResponse.type: Unsupported value: "Drop": supported values: "Queue", "Reject"`}},
		{"limited without limited", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil }),
			[]string{"spec.limited: Required value"}},
		{"exempt under limited", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}), []string{"spec.exempt: Forbidden"}},
		{"no type", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Type = "" }),
			[]string{"spec.limited: Forbidden", "spec.type: Required value"}},
		{"exempt type elsewhere", &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "x"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}},
			[]string{"spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'"}},
		{"v1beta3 annotation", limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Annotations = map[string]string{flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey: ""}
		}), []string{"metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"}},
		{"changed catch-all", func() *flowcontrolv1.PriorityLevelConfiguration {
			pl := catchAll.DeepCopy()
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(50))
			return pl
		}(), []string{"spec: Invalid value: ", "spec of 'catch-all' must equal the fixed value"}},
		{"exempt's shares may change", func() *flowcontrolv1.PriorityLevelConfiguration {
			pl := exempt.DeepCopy()
			pl.Spec.Exempt.NominalConcurrencyShares = ptr.To(int32(10))
			return pl
		}(), nil},
		{"exempt made limited", func() *flowcontrolv1.PriorityLevelConfiguration {
			pl := limited("exempt")
			SetDefaults(pl)
			return pl
		}(), []string{"spec.type: Invalid value: \"Limited\"", "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := tc.pl.DeepCopy()
			SetDefaults(pl)
			errs := Strategy.ValidateDeclaratively(context.Background(), pl, nil, Strategy.Validate(context.Background(), pl), operation.Create, Strategy.DeclarativeValidationConfig(context.Background(), pl, nil))
			if tc.want == nil {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			got := errs.ToAggregate()
			if got == nil {
				t.Fatalf("want %q, got valid", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("got %v, want it to contain %q", got, w)
				}
			}
		})
	}
}

// An update revalidates the whole object, but the declared rules only what changed (so an
// object stored before a rule existed stays updatable).
func TestDeclaredRulesRatchet(t *testing.T) {
	old := limited("x", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
	})
	SetDefaults(old)
	pl := old.DeepCopy()
	pl.Labels = map[string]string{"a": "b"}
	if errs := declaredRuleErrors(context.Background(), pl, old); len(errs) > 0 {
		t.Errorf("unchanged spec: %v", errs)
	}
	pl.Spec.Limited.LendablePercent = ptr.To(int32(5))
	if errs := declaredRuleErrors(context.Background(), pl, old); len(errs) > 0 {
		t.Errorf("unchanged limit response: %v", errs)
	}
	pl.Spec.Limited.LimitResponse.Queuing.Queues = 3
	if errs := declaredRuleErrors(context.Background(), pl, old); len(errs) != 1 || errs[0].Field != "spec.limited.limitResponse.queuing" {
		t.Errorf("changed limit response: %v", errs)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	old := limited("x")
	SetDefaults(old)
	old.Generation = 3
	old.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Ready"}}
	pl := old.DeepCopy()
	pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	Strategy.PrepareForUpdate(context.Background(), pl, old)
	if pl.Generation != 3 || len(pl.Status.Conditions) != 1 {
		t.Errorf("unchanged spec: generation %d, status %v; want 3 and the old status", pl.Generation, pl.Status)
	}
	pl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(1))
	Strategy.PrepareForUpdate(context.Background(), pl, old)
	if pl.Generation != 4 {
		t.Errorf("changed spec: generation %d, want 4", pl.Generation)
	}

	status := old.DeepCopy()
	status.Spec.Limited = nil
	status.Labels = map[string]string{"a": "b"}
	status.Status.Conditions = nil
	StatusStrategy.PrepareForUpdate(context.Background(), status, old)
	if status.Spec.Limited == nil || status.Labels != nil || len(status.Status.Conditions) != 0 {
		t.Errorf("status update kept %+v", status)
	}
	if errs := StatusStrategy.ValidateUpdate(context.Background(), &flowcontrolv1.PriorityLevelConfiguration{Status: flowcontrolv1.PriorityLevelConfigurationStatus{
		Conditions: []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "A"}, {Type: "A"}, {}}}}, old); len(errs) != 2 ||
		errs[0].Type != field.ErrorTypeDuplicate || errs[1].Field != "status.conditions[2].type" {
		t.Errorf("status validation: %v", errs)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newTableConvertor(clocktesting.NewFakePassiveClock(now))
	list := &flowcontrolv1.PriorityLevelConfigurationList{Items: []flowcontrolv1.PriorityLevelConfiguration{
		*bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy(),
		*bootstrap.SuggestedPriorityLevelConfigurationWorkloadLow.DeepCopy(),
	}}
	for i := range list.Items {
		list.Items[i].CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	}
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, col := range tbl.ColumnDefinitions {
		cols = append(cols, col.Name)
	}
	if got := strings.Join(cols, " "); got != "Name Type NominalConcurrencyShares Queues HandSize QueueLengthLimit Age" {
		t.Errorf("columns %s", got)
	}
	want := [][]any{
		{"exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "60m"},
		{"workload-low", "Limited", int32(100), int32(128), int32(6), int32(50), "60m"},
	}
	for i, row := range tbl.Rows {
		if !apiequality.Semantic.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d: %#v, want %#v", i, row.Cells, want[i])
		}
	}
}
