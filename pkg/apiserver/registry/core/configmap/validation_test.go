package configmap

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

func configMapForValidation(mutate ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", ResourceVersion: "1"}}
	for _, m := range mutate {
		m(cm)
	}
	return cm
}

func withData(kv ...string) func(*corev1.ConfigMap) {
	return func(cm *corev1.ConfigMap) {
		cm.Data = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			cm.Data[kv[i]] = kv[i+1]
		}
	}
}

func withBinary(key string, value []byte) func(*corev1.ConfigMap) {
	return func(cm *corev1.ConfigMap) {
		if cm.BinaryData == nil {
			cm.BinaryData = map[string][]byte{}
		}
		cm.BinaryData[key] = value
	}
}

func withImmutable(v bool) func(*corev1.ConfigMap) {
	return func(cm *corev1.ConfigMap) { cm.Immutable = &v }
}

func TestValidateConfigMap(t *testing.T) {
	tests := []struct {
		name string
		cm   *corev1.ConfigMap
		want []string
	}{
		{name: "valid", cm: configMapForValidation(withData("app.properties", "a=b", "key_2", "x", ".hidden", "y"), withBinary("logo.png", []byte{1}))},
		{name: "name with dots is fine", cm: configMapForValidation(func(cm *corev1.ConfigMap) { cm.Name = "kube-root-ca.crt" })},
		{name: "uppercase name", cm: configMapForValidation(func(cm *corev1.ConfigMap) { cm.Name = "Cfg" }),
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "no namespace", cm: configMapForValidation(func(cm *corev1.ConfigMap) { cm.Namespace = "" }),
			want: []string{"FieldValueRequired metadata.namespace"}},
		{name: "bad data key", cm: configMapForValidation(withData("a/b", "x")), want: []string{"FieldValueInvalid data[a/b]"}},
		{name: "bad binary key", cm: configMapForValidation(withBinary("..", nil)), want: []string{"FieldValueInvalid binaryData[..]"}},
		{name: "key in both maps", cm: configMapForValidation(withData("k", "v"), withBinary("k", []byte("v"))),
			want: []string{"FieldValueInvalid data[k]"}},
		{name: "exactly the limit", cm: configMapForValidation(withData("a", strings.Repeat("x", corev1.MaxSecretSize-1)), withBinary("b", []byte{0}))},
		{name: "over the limit across both maps", cm: configMapForValidation(withData("a", strings.Repeat("x", corev1.MaxSecretSize)), withBinary("b", []byte{0})),
			want: []string{"FieldValueTooLong []"}},
		{name: "non-standard finalizer", cm: configMapForValidation(func(cm *corev1.ConfigMap) { cm.Finalizers = []string{"mine"} }),
			want: []string{"FieldValueInvalid metadata.finalizers[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateConfigMap(tc.cm), tc.want)
		})
	}
}

func TestValidateConfigMapUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *corev1.ConfigMap
		want     []string
	}{
		{name: "mutable data change", old: configMapForValidation(withData("a", "1")), new: configMapForValidation(withData("a", "2"))},
		{name: "make immutable", old: configMapForValidation(withData("a", "1")), new: configMapForValidation(withData("a", "1"), withImmutable(true))},
		{name: "immutable, labels change", old: configMapForValidation(withData("a", "1"), withImmutable(true)),
			new: configMapForValidation(withData("a", "1"), withImmutable(true), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"x": "y"} })},
		{name: "immutable, data change", old: configMapForValidation(withData("a", "1"), withImmutable(true)),
			new:  configMapForValidation(withData("a", "2"), withImmutable(true)),
			want: []string{"FieldValueForbidden data"}},
		{name: "immutable, binary data change", old: configMapForValidation(withImmutable(true)),
			new:  configMapForValidation(withImmutable(true), withBinary("b", []byte{1})),
			want: []string{"FieldValueForbidden binaryData"}},
		{name: "immutable, unset immutable", old: configMapForValidation(withImmutable(true)), new: configMapForValidation(),
			want: []string{"FieldValueForbidden immutable"}},
		{name: "immutable, set false and change data", old: configMapForValidation(withImmutable(true)), new: configMapForValidation(withImmutable(false), withData("a", "b")),
			want: []string{"FieldValueForbidden immutable", "FieldValueForbidden data"}},
		{name: "immutable=false is not locked", old: configMapForValidation(withImmutable(false)), new: configMapForValidation(withData("a", "b"))},
		{name: "rename", old: configMapForValidation(), new: configMapForValidation(func(cm *corev1.ConfigMap) { cm.Name = "other" }),
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "new state is validated too", old: configMapForValidation(), new: configMapForValidation(withData("a b", "x")),
			want: []string{"FieldValueInvalid data[a b]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateConfigMapUpdate(tc.new, tc.old), tc.want)
		})
	}
}

func TestImmutableMessage(t *testing.T) {
	old := configMapForValidation(withImmutable(true))
	errs := ValidateConfigMapUpdate(configMapForValidation(withImmutable(true), withData("a", "b")), old)
	if len(errs) != 1 || errs[0].Detail != "field is immutable when `immutable` is set" {
		t.Errorf("unexpected errors: %v", errs)
	}
}
