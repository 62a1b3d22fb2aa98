package serviceaccount

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	authenticationtokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
	"k8s.io/klog/v2"
)

// Getter finds the objects a token names, so that a token dies with them.
type Getter interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// Authenticator authenticates the bound tokens of the issuers it accepts.
type Authenticator struct {
	issuers map[string]bool
	keys    map[string][]PublicKey
	all     []PublicKey
	// implicitAuds are the API audiences: a request is for them unless its context says
	// otherwise (TokenReview), and a token without `aud` is taken to be for them.
	implicitAuds authenticator.Audiences
	getter       Getter
	now          func() time.Time
}

var _ authenticator.Token = &Authenticator{}

// NewAuthenticator accepts tokens from any of issuers signed by any of keys (the signing key's
// public half and the older keys kept for rotation).
func NewAuthenticator(issuers []string, keys []PublicKey, apiAudiences []string, getter Getter) *Authenticator {
	a := &Authenticator{
		issuers:      map[string]bool{},
		keys:         map[string][]PublicKey{},
		all:          keys,
		implicitAuds: apiAudiences,
		getter:       getter,
		now:          time.Now,
	}
	for _, iss := range issuers {
		a.issuers[iss] = true
	}
	for _, k := range keys {
		a.keys[k.KeyID] = append(a.keys[k.KeyID], k)
	}
	return a
}

// AuthenticateToken says whether token is one of ours and, if so, who it is. A token from
// another issuer (or not a JWT) is no opinion, so that other authenticators may try it.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if !a.issuers[unverifiedIssuer(token)] {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token)
	if err != nil {
		return nil, false, nil
	}
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	keys := a.all
	if kid != "" {
		keys = a.keys[kid]
	}
	if len(keys) == 0 {
		return nil, false, errors.New("invalid signature, no keys found")
	}
	public, private := &jwt.Claims{}, &PrivateClaims{}
	var errs []error
	verified := false
	for _, k := range keys {
		if err := tok.Claims(k.Key, public, private); err != nil {
			errs = append(errs, err)
			continue
		}
		verified = true
		break
	}
	if !verified {
		return nil, false, utilerrors.NewAggregate(errs)
	}
	if !a.issuers[public.Issuer] {
		return nil, false, fmt.Errorf("token issuer %q is invalid", public.Issuer)
	}

	tokenAuds := authenticator.Audiences(public.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = a.implicitAuds
	}
	wanted, ok := authenticator.AudiencesFrom(ctx)
	if !ok {
		wanted = a.implicitAuds
	}
	auds := tokenAuds.Intersect(wanted)
	if len(auds) == 0 && len(a.implicitAuds) != 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAuds, wanted)
	}

	info, err := a.validate(ctx, public, private)
	if err != nil {
		return nil, false, err
	}
	return &authenticator.Response{User: info.UserInfo(), Audiences: auds}, true, nil
}

// unverifiedIssuer is the `iss` of a JWT's payload, read before its signature is checked,
// only to tell whether the token is ours to judge.
func unverifiedIssuer(token string) string {
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return ""
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return ""
	}
	return claims.Issuer
}

// validate checks the token's times and that what it names still exists, with the same
// UID, and is not being deleted (for longer than the leeway), with kube-apiserver's errors.
func (a *Authenticator) validate(ctx context.Context, public *jwt.Claims, private *PrivateClaims) (*apiserverserviceaccount.ServiceAccountInfo, error) {
	now := a.now()
	switch err := public.Validate(jwt.Expected{Time: now}); err {
	case nil:
	case jwt.ErrExpired:
		return nil, errors.New("service account token has expired")
	case jwt.ErrNotValidYet:
		return nil, errors.New("service account token is not valid yet")
	case jwt.ErrIssuedInTheFuture:
		return nil, errors.New("service account token is issued in the future")
	default:
		return nil, errors.New("service account token claims could not be validated due to unexpected validation error")
	}

	// Objects deleted more than the leeway ago are gone, so that a token outlives its pod
	// no longer than the pod's graceful deletion, and clocks may differ a little.
	deletedBefore := now.Add(-jwt.DefaultLeeway)
	k := private.Kubernetes
	ns, saRef := k.Namespace, k.ServiceAccount
	logger := klog.FromContext(ctx)

	sa, err := a.getter.ServiceAccount(ctx, ns, saRef.Name)
	if err != nil {
		logger.V(4).Info("Could not retrieve the service account of a token", "serviceAccount", klog.KRef(ns, saRef.Name), "err", err)
		return nil, err
	}
	if string(sa.UID) != saRef.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, saRef.UID)
	}
	if deleted(sa.DeletionTimestamp, deletedBefore) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, saRef.Name)
	}
	invalidated := errors.New("service account token has been invalidated")

	if ref := k.Secret; ref != nil {
		secret, err := a.getter.Secret(ctx, ns, ref.Name)
		if err != nil {
			logger.V(4).Info("Could not retrieve the bound secret of a token", "secret", klog.KRef(ns, ref.Name), "err", err)
			return nil, invalidated
		}
		if string(secret.UID) != ref.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.UID, ref.UID)
		}
		if deleted(secret.DeletionTimestamp, deletedBefore) {
			return nil, invalidated
		}
	}

	info := &apiserverserviceaccount.ServiceAccountInfo{
		Namespace:    ns,
		Name:         saRef.Name,
		UID:          saRef.UID,
		CredentialID: authenticationtokenjwt.CredentialIDForJTI(public.ID),
	}
	if ref := k.Pod; ref != nil {
		pod, err := a.getter.Pod(ctx, ns, ref.Name)
		if err != nil {
			logger.V(4).Info("Could not retrieve the bound pod of a token", "pod", klog.KRef(ns, ref.Name), "err", err)
			return nil, invalidated
		}
		if string(pod.UID) != ref.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, ref.UID)
		}
		if deleted(pod.DeletionTimestamp, deletedBefore) {
			return nil, invalidated
		}
		info.PodName, info.PodUID = ref.Name, ref.UID
		// A pod's token names its node only for information: the node is not looked up.
		if k.Node != nil {
			info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
		}
	} else if ref := k.Node; ref != nil {
		node, err := a.getter.Node(ctx, ref.Name)
		if err != nil {
			logger.V(4).Info("Could not retrieve the bound node of a token", "node", ref.Name, "err", err)
			return nil, invalidated
		}
		if string(node.UID) != ref.UID {
			return nil, fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", node.UID, ref.UID)
		}
		if deleted(node.DeletionTimestamp, deletedBefore) {
			return nil, invalidated
		}
		info.NodeName, info.NodeUID = ref.Name, ref.UID
	}
	return info, nil
}

// deleted says whether an object's deletion began before t.
func deleted(ts *metav1.Time, t time.Time) bool {
	return ts != nil && ts.Time.Before(t)
}
