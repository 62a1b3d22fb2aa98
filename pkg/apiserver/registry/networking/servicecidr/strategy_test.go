package servicecidr

import (
	"context"
	"reflect"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func readyStatus() networkingv1.ServiceCIDRStatus {
	return networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{
		{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"},
	}}
}

func TestStrategyScope(t *testing.T) {
	if Strategy.NamespaceScoped() || StatusStrategy.NamespaceScoped() {
		t.Error("service CIDRs are cluster-scoped")
	}
	if Strategy.AllowCreateOnUpdate(context.Background()) || StatusStrategy.AllowCreateOnUpdate(context.Background()) {
		t.Error("AllowCreateOnUpdate: a range is created by POST only")
	}
}

func TestPrepareForCreateDropsStatus(t *testing.T) {
	sc := cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Status = readyStatus() })
	Strategy.PrepareForCreate(context.Background(), sc)
	if !reflect.DeepEqual(sc.Status, networkingv1.ServiceCIDRStatus{}) {
		t.Errorf("status %+v, want none", sc.Status)
	}
	if !reflect.DeepEqual(sc.Spec.CIDRs, cidrs("10.0.0.0/24")) {
		t.Errorf("spec changed: %v", sc.Spec.CIDRs)
	}
}

func TestPrepareForUpdateKeepsStatus(t *testing.T) {
	old := cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) { sc.Status = readyStatus() })
	sc := cidrForValidation(cidrs("10.0.0.0/24", "fd00::/64"), func(sc *networkingv1.ServiceCIDR) {
		sc.Labels = map[string]string{"a": "b"}
	})
	Strategy.PrepareForUpdate(context.Background(), sc, old)
	if !reflect.DeepEqual(sc.Status, readyStatus()) {
		t.Errorf("status %+v, want the stored one", sc.Status)
	}
	if !reflect.DeepEqual(sc.Spec.CIDRs, cidrs("10.0.0.0/24", "fd00::/64")) || sc.Labels["a"] != "b" {
		t.Errorf("spec or labels lost: %+v", sc)
	}
}

func TestStatusPrepareForUpdate(t *testing.T) {
	old := cidrForValidation(cidrs("10.0.0.0/24"), func(sc *networkingv1.ServiceCIDR) {
		sc.Labels = map[string]string{"keep": "me"}
		sc.Finalizers = []string{ProtectionFinalizer}
	})
	sc := cidrForValidation(cidrs("10.9.0.0/16"), func(sc *networkingv1.ServiceCIDR) {
		sc.Status = readyStatus()
		sc.Labels = map[string]string{"other": "x"}
		sc.Annotations = map[string]string{"a": "b"}
		sc.Finalizers = nil
	})
	StatusStrategy.PrepareForUpdate(context.Background(), sc, old)
	if !reflect.DeepEqual(sc.Spec, old.Spec) {
		t.Errorf("spec %+v, want the stored %+v", sc.Spec, old.Spec)
	}
	if !reflect.DeepEqual(sc.Labels, old.Labels) || sc.Annotations != nil || !reflect.DeepEqual(sc.Finalizers, old.Finalizers) {
		t.Errorf("metadata %+v, want the stored labels, annotations and finalizers", sc.ObjectMeta)
	}
	if !reflect.DeepEqual(sc.Status, readyStatus()) {
		t.Errorf("status %+v, want the new one", sc.Status)
	}
}

func TestStrategyValidate(t *testing.T) {
	assertFieldErrors(t, Strategy.Validate(context.Background(), &networkingv1.ServiceCIDR{Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs("bad cidr")}}),
		[]string{"FieldValueRequired metadata.name: name or generateName is required", "FieldValueInvalid spec.cidrs[0]: " + notCIDRMsg})

	old := cidrForValidation(cidrs("10.10.0.0/24"))
	assertFieldErrors(t, Strategy.ValidateUpdate(context.Background(), cidrForValidation(cidrs("bad cidr")), old),
		[]string{"FieldValueInvalid spec.cidrs[0]: " + immutableMsg})
	assertFieldErrors(t, Strategy.ValidateUpdate(context.Background(), cidrForValidation(cidrs("10.10.0.0/24", "fd00::/64")), old), nil)

	assertFieldErrors(t, StatusStrategy.ValidateUpdate(context.Background(), &networkingv1.ServiceCIDR{Status: readyStatus()}, &networkingv1.ServiceCIDR{}),
		[]string{"FieldValueInvalid metadata.resourceVersion: must be specified for an update"})
}

func TestResetFields(t *testing.T) {
	tests := []struct {
		name        string
		fields      map[fieldpath.APIVersion]*fieldpath.Set
		reset, kept []string
	}{
		{"main resource", Strategy.GetResetFields(), []string{"status"}, []string{"spec", "metadata"}},
		{"status", StatusStrategy.GetResetFields(), []string{"metadata", "spec"}, []string{"status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, ok := tt.fields["networking.k8s.io/v1"]
			if !ok || len(tt.fields) != 1 {
				t.Fatalf("reset fields %v, want networking.k8s.io/v1 only", tt.fields)
			}
			for _, p := range tt.reset {
				if !set.Has(fieldpath.MakePathOrDie(p)) {
					t.Errorf("%s not reset", p)
				}
			}
			for _, p := range tt.kept {
				if set.Has(fieldpath.MakePathOrDie(p)) {
					t.Errorf("%s reset", p)
				}
			}
		})
	}
}

func TestFields(t *testing.T) {
	got := Fields(cidrForValidation(cidrs("10.0.0.0/24")))
	if want := (fields.Set{"metadata.name": DefaultName}); !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %v, want %v", got, want)
	}
}
