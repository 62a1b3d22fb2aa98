package ipaddress

import (
	"context"
	"reflect"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestStrategy(t *testing.T) {
	if Strategy.NamespaceScoped() {
		t.Error("IP addresses are cluster-scoped")
	}
	if got := Strategy.GenerateName("10.0.0."); got != "10.0.0." {
		t.Errorf("GenerateName = %q, want the base unchanged", got)
	}
	if Strategy.AllowCreateOnUpdate(context.Background()) {
		t.Error("AllowCreateOnUpdate: an address is created by POST only")
	}
}

func TestStrategyPrepareKeepsEverything(t *testing.T) {
	ip := addressForValidation("10.0.0.1")
	want := ip.DeepCopy()
	Strategy.PrepareForCreate(context.Background(), ip)
	if !reflect.DeepEqual(ip, want) {
		t.Errorf("PrepareForCreate changed %+v", ip)
	}
	moved := addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) { r.Name = "other" }))
	wantMoved := moved.DeepCopy()
	Strategy.PrepareForUpdate(context.Background(), moved, ip)
	if !reflect.DeepEqual(moved, wantMoved) {
		t.Errorf("PrepareForUpdate changed %+v", moved)
	}
}

func TestStrategyValidate(t *testing.T) {
	bad := addressForValidation("web", func(ip *networkingv1.IPAddress) { ip.Spec.ParentRef = nil })
	assertFieldErrors(t, Strategy.Validate(context.Background(), bad), []string{
		"FieldValueInvalid metadata.name: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
		"FieldValueRequired spec.parentRef: ",
	})
}

func TestStrategyValidateUpdate(t *testing.T) {
	old := addressForValidation("10.0.0.1")
	// The new state is validated as on create, and against the old one.
	removed := addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Spec.ParentRef = nil })
	assertFieldErrors(t, Strategy.ValidateUpdate(context.Background(), removed, old), []string{
		"FieldValueInvalid spec.parentRef: field is immutable",
		"FieldValueRequired spec.parentRef: ",
	})
	assertFieldErrors(t, Strategy.ValidateUpdate(context.Background(), old.DeepCopy(), old), nil)
}

func TestFields(t *testing.T) {
	got := Fields(addressForValidation("10.0.0.1"))
	if want := (fields.Set{"metadata.name": "10.0.0.1"}); !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %v, want %v", got, want)
	}
	if _, ok := Fields(&networkingv1.IPAddress{})["metadata.name"]; !ok {
		t.Error("a zero address must still list metadata.name")
	}
}
