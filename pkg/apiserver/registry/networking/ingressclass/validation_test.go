package ingressclass

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// errorSummary is each error as "Type path: detail", sorted.
func errorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s: %s", string(e.Type), e.Field, e.Detail))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := errorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func class(mutate ...func(*networkingv1.IngressClass)) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", ResourceVersion: "1"},
		Spec:       networkingv1.IngressClassSpec{Controller: "example.com/ingress"},
	}
	for _, m := range mutate {
		m(ic)
	}
	return ic
}

func params(scope string, ns *string) func(*networkingv1.IngressClass) {
	return func(ic *networkingv1.IngressClass) {
		ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{
			APIGroup: ptr.To("example.com"), Kind: "Params", Name: "p", Scope: ptr.To(scope), Namespace: ns,
		}
	}
}

func TestSetDefaults(t *testing.T) {
	ic := class(func(ic *networkingv1.IngressClass) {
		ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "Params", Name: "p"}
	})
	SetDefaults(ic)
	if s := ic.Spec.Parameters.Scope; s == nil || *s != "Cluster" {
		t.Errorf("scope %v, want Cluster", s)
	}
	none := class()
	SetDefaults(none)
	if none.Spec.Parameters != nil {
		t.Errorf("parameters %+v, want none", none.Spec.Parameters)
	}
}

func TestValidateIngressClass(t *testing.T) {
	tests := []struct {
		name string
		ic   *networkingv1.IngressClass
		want []string
	}{
		{name: "valid", ic: class()},
		{name: "cluster parameters", ic: class(params("Cluster", nil))},
		{name: "namespaced parameters", ic: class(params("Namespace", ptr.To("ingress")))},
		{name: "no controller", ic: class(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "" }),
			want: []string{"FieldValueRequired spec.controller: "}},
		{name: "controller without a domain", ic: class(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "nginx" }),
			want: []string{"FieldValueInvalid spec.controller: must be a domain-prefixed path (such as \"acme.io/foo\")"}},
		{name: "controller too long", ic: class(func(ic *networkingv1.IngressClass) {
			ic.Spec.Controller = "example.com/" + string(make([]byte, 250))
		}), want: nil},
		{name: "no scope", ic: class(params("Cluster", nil), func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Scope = nil }),
			want: []string{"FieldValueRequired spec.parameters.scope: "}},
		{name: "unknown scope", ic: class(params("Global", nil)),
			want: []string{`FieldValueNotSupported spec.parameters.scope: supported values: "Cluster", "Namespace"`}},
		{name: "namespace scope without namespace", ic: class(params("Namespace", nil)),
			want: []string{"FieldValueRequired spec.parameters.namespace: `parameters.scope` is set to 'Namespace'"}},
		{name: "cluster scope with namespace", ic: class(params("Cluster", ptr.To("ingress"))),
			want: []string{"FieldValueForbidden spec.parameters.namespace: `parameters.scope` is set to 'Cluster'"}},
		{name: "no kind nor name", ic: class(params("Cluster", nil), func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters.Kind, ic.Spec.Parameters.Name = "", ""
		}), want: []string{"FieldValueRequired spec.parameters.kind: ", "FieldValueRequired spec.parameters.name: "}},
		{name: "kind with a slash", ic: class(params("Cluster", nil), func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Kind = "a/b" }),
			want: []string{`FieldValueInvalid spec.parameters.kind: may not contain '/'`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateIngressClass(tt.ic)
			if tt.name == "controller too long" {
				if len(errs) == 0 || errs[0].Type != field.ErrorTypeTooLong || errs[0].Field != "spec.controller" {
					t.Errorf("errors %v, want spec.controller too long first", errs)
				}
				return
			}
			assertFieldErrors(t, errs, tt.want)
		})
	}
}

func TestValidateIngressClassUpdate(t *testing.T) {
	old := class()
	ic := class(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "example.com/other" })
	assertFieldErrors(t, Strategy.ValidateUpdate(context.Background(), ic, old),
		[]string{"FieldValueInvalid spec.controller: field is immutable"})
	params := class(params("Cluster", nil))
	assertFieldErrors(t, Strategy.ValidateUpdate(context.Background(), params, old), nil)
	Strategy.PrepareForUpdate(context.Background(), params, old)
	if params.Generation != old.Generation+1 {
		t.Errorf("generation %d, want %d", params.Generation, old.Generation+1)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	def := class(params("Cluster", nil), func(ic *networkingv1.IngressClass) {
		ic.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
		ic.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	})
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), def, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tbl.Rows[0].Cells); got != "[nginx (default) example.com/ingress Params.example.com/p 60m]" {
		t.Errorf("row %s", got)
	}
}
