package apiserver

import (
	"strings"
	"testing"
	"time"
)

// TestValidateServiceAccountConfig: kube-apiserver's checks of the service-account flags.
func TestValidateServiceAccountConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ServiceAccountConfig
		wantErr string
	}{
		{name: "default", cfg: ServiceAccountConfig{Issuers: []string{DefaultServiceAccountIssuer}}},
		{name: "plain string issuer", cfg: ServiceAccountConfig{Issuers: []string{"kubernetes/serviceaccount"}}},
		{name: "empty issuer", cfg: ServiceAccountConfig{Issuers: []string{""}}, wantErr: "service-account-issuer should not be an empty string"},
		{name: "repeated issuer", cfg: ServiceAccountConfig{Issuers: []string{"https://a", "https://a"}}, wantErr: `service-account-issuer "https://a" is already specified`},
		{name: "bad URL", cfg: ServiceAccountConfig{Issuers: []string{"https://a b:x"}}, wantErr: `contained a ':' but was not a valid URL`},
		{name: "http JWKS", cfg: ServiceAccountConfig{Issuers: []string{"https://a"}, JWKSURI: "http://a/keys"}, wantErr: "service-account-jwks-uri requires https scheme"},
		{name: "max too short", cfg: ServiceAccountConfig{Issuers: []string{"https://a"}, MaxTokenExpiration: 30 * time.Minute},
			wantErr: "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"},
		{name: "max", cfg: ServiceAccountConfig{Issuers: []string{"https://a"}, MaxTokenExpiration: 24 * time.Hour}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateServiceAccountConfig(tc.cfg)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}
