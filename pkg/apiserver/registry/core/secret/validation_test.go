package secret

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

func secretForValidation(typ corev1.SecretType, mutate ...func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", ResourceVersion: "1"}, Type: typ}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func withData(kv ...string) func(*corev1.Secret) {
	return func(s *corev1.Secret) {
		s.Data = map[string][]byte{}
		for i := 0; i < len(kv); i += 2 {
			s.Data[kv[i]] = []byte(kv[i+1])
		}
	}
}

func withImmutable(v bool) func(*corev1.Secret) {
	return func(s *corev1.Secret) { s.Immutable = &v }
}

func TestValidateSecret(t *testing.T) {
	tests := []struct {
		name string
		s    *corev1.Secret
		want []string
	}{
		{name: "opaque", s: secretForValidation(corev1.SecretTypeOpaque, withData("a", "b", "x.y_z-1", ""))},
		{name: "empty type", s: secretForValidation("")},
		{name: "unknown type is free-form", s: secretForValidation("example.com/custom")},
		{name: "bad name", s: secretForValidation(corev1.SecretTypeOpaque, func(s *corev1.Secret) { s.Name = "S_1" }),
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "bad key", s: secretForValidation(corev1.SecretTypeOpaque, withData("a:b", "x")), want: []string{"FieldValueInvalid data[a:b]"}},
		{name: "too big", s: secretForValidation(corev1.SecretTypeOpaque, withData("a", strings.Repeat("x", corev1.MaxSecretSize), "b", "y")),
			want: []string{"FieldValueTooLong data"}},
		{name: "at the limit", s: secretForValidation(corev1.SecretTypeOpaque, withData("a", strings.Repeat("x", corev1.MaxSecretSize)))},

		{name: "sa token with name", s: secretForValidation(corev1.SecretTypeServiceAccountToken, func(s *corev1.Secret) {
			s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
		})},
		{name: "sa token without name", s: secretForValidation(corev1.SecretTypeServiceAccountToken),
			want: []string{"FieldValueRequired metadata.annotations[kubernetes.io/service-account.name]"}},

		{name: "dockercfg valid", s: secretForValidation(corev1.SecretTypeDockercfg, withData(corev1.DockerConfigKey, `{"registry":{"auth":"x"}}`))},
		{name: "dockercfg missing", s: secretForValidation(corev1.SecretTypeDockercfg), want: []string{"FieldValueRequired data[.dockercfg]"}},
		{name: "dockercfg not json", s: secretForValidation(corev1.SecretTypeDockercfg, withData(corev1.DockerConfigKey, `{`)),
			want: []string{"FieldValueInvalid data[.dockercfg]"}},
		{name: "dockerconfigjson valid", s: secretForValidation(corev1.SecretTypeDockerConfigJson, withData(corev1.DockerConfigJsonKey, `{"auths":{}}`))},
		{name: "dockerconfigjson is an array", s: secretForValidation(corev1.SecretTypeDockerConfigJson, withData(corev1.DockerConfigJsonKey, `[]`)),
			want: []string{"FieldValueInvalid data[.dockerconfigjson]"}},
		{name: "dockerconfigjson missing", s: secretForValidation(corev1.SecretTypeDockerConfigJson, withData(corev1.DockerConfigKey, `{}`)),
			want: []string{"FieldValueRequired data[.dockerconfigjson]"}},

		{name: "basic auth username only", s: secretForValidation(corev1.SecretTypeBasicAuth, withData(corev1.BasicAuthUsernameKey, ""))},
		{name: "basic auth password only", s: secretForValidation(corev1.SecretTypeBasicAuth, withData(corev1.BasicAuthPasswordKey, "p"))},
		{name: "basic auth neither", s: secretForValidation(corev1.SecretTypeBasicAuth),
			want: []string{"FieldValueRequired data[username]", "FieldValueRequired data[password]"}},

		{name: "ssh auth", s: secretForValidation(corev1.SecretTypeSSHAuth, withData(corev1.SSHAuthPrivateKey, "k"))},
		{name: "ssh auth empty key", s: secretForValidation(corev1.SecretTypeSSHAuth, withData(corev1.SSHAuthPrivateKey, "")),
			want: []string{"FieldValueRequired data[ssh-privatekey]"}},

		{name: "tls", s: secretForValidation(corev1.SecretTypeTLS, withData(corev1.TLSCertKey, "", corev1.TLSPrivateKeyKey, ""))},
		{name: "tls without key", s: secretForValidation(corev1.SecretTypeTLS, withData(corev1.TLSCertKey, "c")),
			want: []string{"FieldValueRequired data[tls.key]"}},
		{name: "tls empty", s: secretForValidation(corev1.SecretTypeTLS),
			want: []string{"FieldValueRequired data[tls.crt]", "FieldValueRequired data[tls.key]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateSecret(tc.s), tc.want)
		})
	}
}

func TestInvalidJSONIsRedacted(t *testing.T) {
	errs := ValidateSecret(secretForValidation(corev1.SecretTypeDockercfg, withData(corev1.DockerConfigKey, `{"secret-token"`)))
	if len(errs) != 1 || errs[0].BadValue != "<secret contents redacted>" {
		t.Fatalf("unexpected errors: %v", errs)
	}
	if strings.Contains(errs.ToAggregate().Error(), "secret-token") {
		t.Errorf("error leaks the secret: %v", errs)
	}
}

func TestValidateSecretUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *corev1.Secret
		want     []string
	}{
		{name: "data change", old: secretForValidation(corev1.SecretTypeOpaque, withData("a", "1")), new: secretForValidation(corev1.SecretTypeOpaque, withData("a", "2"))},
		{name: "type change", old: secretForValidation(corev1.SecretTypeOpaque), new: secretForValidation("example.com/other"),
			want: []string{"FieldValueInvalid type"}},
		{name: "immutable, labels change", old: secretForValidation(corev1.SecretTypeOpaque, withImmutable(true)),
			new: secretForValidation(corev1.SecretTypeOpaque, withImmutable(true), func(s *corev1.Secret) { s.Labels = map[string]string{"a": "b"} })},
		{name: "immutable, data change", old: secretForValidation(corev1.SecretTypeOpaque, withImmutable(true), withData("a", "1")),
			new:  secretForValidation(corev1.SecretTypeOpaque, withImmutable(true), withData("a", "2")),
			want: []string{"FieldValueForbidden data"}},
		{name: "immutable, unset", old: secretForValidation(corev1.SecretTypeOpaque, withImmutable(true)), new: secretForValidation(corev1.SecretTypeOpaque, withImmutable(false)),
			want: []string{"FieldValueForbidden immutable"}},
		{name: "new state validated", old: secretForValidation(corev1.SecretTypeTLS, withData(corev1.TLSCertKey, "", corev1.TLSPrivateKeyKey, "")),
			new:  secretForValidation(corev1.SecretTypeTLS, withData(corev1.TLSCertKey, "")),
			want: []string{"FieldValueRequired data[tls.key]"}},
		{name: "no resourceVersion", old: secretForValidation(corev1.SecretTypeOpaque), new: secretForValidation(corev1.SecretTypeOpaque, func(s *corev1.Secret) { s.ResourceVersion = "" }),
			want: []string{"FieldValueInvalid metadata.resourceVersion"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateSecretUpdate(tc.new, tc.old), tc.want)
		})
	}
}
