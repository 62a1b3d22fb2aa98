package apiserver

import (
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	registrysa "github.com/berth-cluster/berth/pkg/apiserver/registry/core/serviceaccount"
	"github.com/berth-cluster/berth/pkg/auth/serviceaccount"
)

// DefaultServiceAccountIssuer is the issuer kubeadm and k3s give their clusters: the API
// server's in-cluster name.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// tokenSuccessCacheTTL is how long an authenticated token is remembered (kube-apiserver's
// --token-auth success cache): a token outlives its deleted pod by at most this much.
const tokenSuccessCacheTTL = 10 * time.Second

// ServiceAccountConfig says how service-account tokens are issued and verified, as
// kube-apiserver's --service-account-* and --api-audiences flags do.
type ServiceAccountConfig struct {
	// Issuers are the accepted `iss` values; the first is what new tokens carry
	// (DefaultServiceAccountIssuer when empty).
	Issuers []string
	// SigningKeyFile is the private key tokens are signed with; without it the API server
	// issues no tokens (serviceaccounts/token is not served).
	SigningKeyFile string
	// KeyFiles hold more keys tokens may be signed with (those of earlier signing keys, for
	// rotation); the signing key's public half is always one.
	KeyFiles []string
	// JWKSURI is the jwks_uri of the OpenID discovery document (default: the API server's
	// external address).
	JWKSURI string
	// APIAudiences are the audiences a token must have to be accepted by this API server (the
	// issuers when empty), and the default audiences of a TokenRequest.
	APIAudiences []string
	// MaxTokenExpiration caps a requested token's lifetime; 0 is no cap.
	MaxTokenExpiration time.Duration
	// NoExtendTokenExpiration turns off the year that a pod's 3607 s token gets
	// (--service-account-extend-token-expiration=false).
	NoExtendTokenExpiration bool
}

// serviceAccountTokens is what the API server does with service-account tokens: issue them
// (nil issuer when there is no signing key), authenticate them, publish their keys.
type serviceAccountTokens struct {
	cfg       ServiceAccountConfig
	issuer    *serviceaccount.Issuer
	keys      []serviceaccount.PublicKey
	audiences []string
	// token authenticates a bearer token: nil when no key verifies tokens.
	token authenticator.Token
}

// newServiceAccountTokens checks the configuration as kube-apiserver does and loads the keys.
// Lookups of the objects a token names go through f's informers, with client for misses.
func newServiceAccountTokens(cfg ServiceAccountConfig, f informers.SharedInformerFactory, client kubernetes.Interface) (*serviceAccountTokens, error) {
	if len(cfg.Issuers) == 0 {
		cfg.Issuers = []string{DefaultServiceAccountIssuer}
	}
	if err := validateServiceAccountConfig(cfg); err != nil {
		return nil, err
	}
	t := &serviceAccountTokens{cfg: cfg, audiences: cfg.APIAudiences}
	if len(t.audiences) == 0 {
		t.audiences = cfg.Issuers
	}
	var pubs []crypto.PublicKey
	if cfg.SigningKeyFile != "" {
		key, err := serviceaccount.LoadSigningKey(cfg.SigningKeyFile)
		if err != nil {
			return nil, err
		}
		if t.issuer, err = serviceaccount.NewIssuer(cfg.Issuers[0], key); err != nil {
			return nil, fmt.Errorf("failed to build token generator: %w", err)
		}
		pubs = append(pubs, key.Public())
	}
	more, err := serviceaccount.LoadVerificationKeys(cfg.KeyFiles...)
	if err != nil {
		return nil, err
	}
	if t.keys, err = serviceaccount.NewPublicKeys(append(pubs, more...)...); err != nil {
		return nil, err
	}
	if len(t.keys) > 0 {
		auth := serviceaccount.NewAuthenticator(cfg.Issuers, t.keys, t.audiences, serviceaccount.NewGetter(f, client))
		t.token = tokencache.New(auth, true, tokenSuccessCacheTTL, 0)
	}
	return t, nil
}

func validateServiceAccountConfig(cfg ServiceAccountConfig) error {
	var errs []error
	seen := map[string]bool{}
	for _, iss := range cfg.Issuers {
		if strings.Contains(iss, ":") {
			if _, err := url.Parse(iss); err != nil {
				errs = append(errs, fmt.Errorf("service-account-issuer %q contained a ':' but was not a valid URL: %w", iss, err))
				continue
			}
		}
		switch {
		case iss == "":
			errs = append(errs, errors.New("service-account-issuer should not be an empty string"))
		case seen[iss]:
			errs = append(errs, fmt.Errorf("service-account-issuer %q is already specified", iss))
		}
		seen[iss] = true
	}
	if cfg.JWKSURI != "" {
		if u, err := url.Parse(cfg.JWKSURI); err != nil {
			errs = append(errs, fmt.Errorf("service-account-jwks-uri must be a valid URL: %w", err))
		} else if u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("service-account-jwks-uri requires https scheme, parsed as: %v", u.String()))
		}
	}
	if m := cfg.MaxTokenExpiration; m != 0 && (m < time.Hour || m > time.Duration(1<<32)*time.Second) {
		errs = append(errs, errors.New("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"))
	}
	return errors.Join(errs...)
}

// requestAuthenticator takes the token from a request's Authorization header or, for
// websockets, its protocol header; it adds system:authenticated as the certificate one does.
// nil when tokens are not authenticated.
func (t *serviceAccountTokens) requestAuthenticator() authenticator.Request {
	if t.token == nil {
		return nil
	}
	return group.NewAuthenticatedGroupAdder(union.New(bearertoken.New(t.token), websocket.NewProtocolAuthenticator(t.token)))
}

// tokenOptions are the token subresource's settings.
func (t *serviceAccountTokens) tokenOptions() registrysa.TokenOptions {
	return registrysa.TokenOptions{
		Audiences:        t.audiences,
		MaxExpiration:    t.cfg.MaxTokenExpiration,
		ExtendExpiration: !t.cfg.NoExtendTokenExpiration,
	}
}

// installOpenID serves the discovery document and the key set, as kube-apiserver does, when
// the issuer is an https URL; otherwise it says why not and serves neither.
func (t *serviceAccountTokens) installOpenID(gs *genericapiserver.GenericAPIServer, externalAddress string) {
	md, err := serviceaccount.NewOpenIDMetadata(t.cfg.Issuers[0], t.cfg.JWKSURI, externalAddress, t.keys)
	if err != nil {
		klog.ErrorS(err, "Could not construct pre-rendered responses for ServiceAccountIssuerDiscovery endpoints. Endpoints will not be enabled")
		return
	}
	route := func(path, mediaType, op, doc string, h func(w http.ResponseWriter, r *http.Request)) {
		ws := new(restful.WebService).Produces(mediaType)
		ws.Path(path).Route(ws.GET("").
			To(func(req *restful.Request, resp *restful.Response) { h(resp, req.Request) }).
			Doc(doc).Operation(op).Returns(http.StatusOK, "OK", ""))
		gs.Handler.GoRestfulContainer.Add(ws)
	}
	route(serviceaccount.OpenIDConfigPath, restful.MIME_JSON, "getServiceAccountIssuerOpenIDConfiguration",
		"get service account issuer OpenID configuration, also known as the 'OIDC discovery doc'", md.ServeConfig)
	route(serviceaccount.JWKSPath, "application/jwk-set+json", "getServiceAccountIssuerOpenIDKeyset",
		"get service account issuer OpenID JSON Web Key Set (contains public token verification keys)", md.ServeKeys)
}
