package serviceaccount

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

func accountForValidation(mutate ...func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "ci", ResourceVersion: "1"}}
	for _, m := range mutate {
		m(sa)
	}
	return sa
}

func TestValidateServiceAccount(t *testing.T) {
	tests := []struct {
		name string
		sa   *corev1.ServiceAccount
		want []string
	}{
		{name: "valid", sa: accountForValidation(func(sa *corev1.ServiceAccount) {
			sa.Secrets = []corev1.ObjectReference{{Name: "whatever"}}
			sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		})},
		{name: "dotted name", sa: accountForValidation(func(sa *corev1.ServiceAccount) { sa.Name = "system.node-agent" })},
		{name: "bad name", sa: accountForValidation(func(sa *corev1.ServiceAccount) { sa.Name = "Builder" }),
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "name too long", sa: accountForValidation(func(sa *corev1.ServiceAccount) { sa.Name = strings.Repeat("a", 254) }),
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "no namespace", sa: accountForValidation(func(sa *corev1.ServiceAccount) { sa.Namespace = "" }),
			want: []string{"FieldValueRequired metadata.namespace"}},
		{name: "non-standard finalizer", sa: accountForValidation(func(sa *corev1.ServiceAccount) { sa.Finalizers = []string{"x"} }),
			want: []string{"FieldValueInvalid metadata.finalizers[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateServiceAccount(tc.sa), tc.want)
		})
	}
}

func TestValidateServiceAccountUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *corev1.ServiceAccount
		want     []string
	}{
		{name: "add secret", old: accountForValidation(), new: accountForValidation(func(sa *corev1.ServiceAccount) {
			sa.Secrets = []corev1.ObjectReference{{Name: "token"}}
		})},
		{name: "rename", old: accountForValidation(), new: accountForValidation(func(sa *corev1.ServiceAccount) { sa.Name = "other" }),
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "move namespace", old: accountForValidation(), new: accountForValidation(func(sa *corev1.ServiceAccount) { sa.Namespace = "other" }),
			want: []string{"FieldValueInvalid metadata.namespace"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateServiceAccountUpdate(tc.new, tc.old), tc.want)
		})
	}
}
