package serviceaccount

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	jose "gopkg.in/go-jose/go-jose.v2"
	"k8s.io/klog/v2"
)

const (
	// OpenIDConfigPath is where the OpenID discovery document is served.
	OpenIDConfigPath = "/.well-known/openid-configuration"
	// JWKSPath is where the public keys are served, as a JSON Web Key Set.
	JWKSPath = "/openid/v1/jwks"

	// jwksMediaType is the JWKS's content type (RFC 7517).
	jwksMediaType = "application/jwk-set+json"
	// cacheMaxAge is how long a relying party may cache either document: kube-apiserver's
	// figure for keys read from files, which change only with a restart.
	cacheMaxAge = 3600
)

// OpenIDMetadata is the issuer's discovery document and key set, rendered once.
type OpenIDMetadata struct {
	config, keyset []byte
}

// NewOpenIDMetadata renders the documents of issuer (an https URL without query or fragment)
// with its keys at jwksURI (an https URL; empty means https://externalAddress/openid/v1/jwks,
// the API server's own address, as kube-apiserver does).
func NewOpenIDMetadata(issuer, jwksURI, externalAddress string, keys []PublicKey) (*OpenIDMetadata, error) {
	iss, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	switch {
	case iss.Scheme != "https":
		return nil, fmt.Errorf("issuer URL must use https scheme, got: %s", issuer)
	case iss.RawQuery != "":
		return nil, fmt.Errorf("issuer URL may not include a query, got: %s", issuer)
	case iss.Fragment != "":
		return nil, fmt.Errorf("issuer URL may not include a fragment, got: %s", issuer)
	}
	if jwksURI == "" {
		if externalAddress == "" {
			return nil, fmt.Errorf("either the JWKS URI or the default external address, or both, must be set")
		}
		jwksURI = (&url.URL{Scheme: "https", Host: externalAddress, Path: JWKSPath}).String()
	} else if u, err := url.Parse(jwksURI); err != nil {
		return nil, err
	} else if u.Scheme != "https" {
		return nil, fmt.Errorf("jwksURI requires https scheme, parsed as: %v", u.String())
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no keys provided for validating keyset")
	}

	var set jose.JSONWebKeySet
	var algs []string
	for i, k := range keys {
		alg, err := algorithm(k.Key)
		if err != nil {
			return nil, fmt.Errorf("error constructing JWK for key #%d: %w", i, err)
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Algorithm: string(alg), Key: k.Key, KeyID: k.KeyID, Use: "sig"})
		if !slices.Contains(algs, string(alg)) {
			algs = append(algs, string(alg))
		}
	}
	slices.Sort(algs)
	keyset, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal service account issuer JWKS: %w", err)
	}
	config, err := json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{
		Issuer:  issuer,
		JWKSURI: jwksURI,
		// The API server issues only ID tokens, with public subjects.
		ResponseTypes: []string{"id_token"},
		SubjectTypes:  []string{"public"},
		SigningAlgs:   algs,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to marshal service account issuer metadata: %w", err)
	}
	return &OpenIDMetadata{config: config, keyset: keyset}, nil
}

// ServeConfig serves the discovery document.
func (m *OpenIDMetadata) ServeConfig(w http.ResponseWriter, _ *http.Request) {
	serve(w, "application/json", m.config)
}

// ServeKeys serves the key set.
func (m *OpenIDMetadata) ServeKeys(w http.ResponseWriter, _ *http.Request) {
	serve(w, jwksMediaType, m.keyset)
}

func serve(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", cacheMaxAge))
	if _, err := w.Write(body); err != nil {
		klog.ErrorS(err, "Failed to write a service account issuer document")
	}
}
