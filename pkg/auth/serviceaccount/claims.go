package serviceaccount

import (
	"errors"
	"time"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

const (
	// WarnOnlyExpirationSeconds is the expiration the ServiceAccount admission plugin gives a
	// pod's projected token (an hour and 7 s, so that it is recognisable). Such a token asked
	// for by a pod is extended to ExtendedExpirationSeconds, with `warnafter` at the hour: old
	// clients that never reread their token keep working, and the API server counts them.
	WarnOnlyExpirationSeconds = 60*60 + 7
	// ExtendedExpirationSeconds is a year.
	ExtendedExpirationSeconds = 24 * 365 * 60 * 60
)

// Token is what a token is issued for: the service account and at most one bound object (a
// pod, with the node it runs on, a secret, or a node).
type Token struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod
	// Node is the bound node, or the node of the bound pod (then only its name may be known).
	Node   *corev1.Node
	Secret *corev1.Secret
	// Audiences go into `aud`.
	Audiences []string
	// ExpirationSeconds is the token's lifetime; WarnAfterSeconds, when not zero, is when a
	// client should have replaced it (an extended token).
	ExpirationSeconds, WarnAfterSeconds int64
}

// PrivateClaims are the claims of a token beyond the registered ones: the `kubernetes.io`
// claim naming the namespace, the account and the bound object with their UIDs.
type PrivateClaims struct {
	Kubernetes Kubernetes `json:"kubernetes.io,omitempty"`
}

// Kubernetes is the `kubernetes.io` claim, as kube-apiserver writes it.
type Kubernetes struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount Ref              `json:"serviceaccount,omitempty"`
	Pod            *Ref             `json:"pod,omitempty"`
	Secret         *Ref             `json:"secret,omitempty"`
	Node           *Ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

// Ref names an object and its UID.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// claims are a token's public and private claims, issued at now with ID jti. The issuer is
// the Issuer's to add.
func claims(t Token, now time.Time, jti string) (*jwt.Claims, *PrivateClaims, error) {
	sa := t.ServiceAccount
	if sa == nil {
		return nil, nil, errors.New("internal error, token needs a service account")
	}
	if t.Secret != nil && (t.Pod != nil || t.Node != nil) {
		return nil, nil, errors.New("internal error, token can only be bound to one object type")
	}
	public := &jwt.Claims{
		Subject:   apiserverserviceaccount.MakeUsername(sa.Namespace, sa.Name),
		Audience:  jwt.Audience(t.Audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(time.Duration(t.ExpirationSeconds) * time.Second)),
		ID:        jti,
	}
	private := &PrivateClaims{Kubernetes: Kubernetes{
		Namespace:      sa.Namespace,
		ServiceAccount: Ref{Name: sa.Name, UID: string(sa.UID)},
	}}
	switch {
	case t.Pod != nil:
		private.Kubernetes.Pod = &Ref{Name: t.Pod.Name, UID: string(t.Pod.UID)}
		if t.Node != nil {
			private.Kubernetes.Node = &Ref{Name: t.Node.Name, UID: string(t.Node.UID)}
		}
	case t.Secret != nil:
		private.Kubernetes.Secret = &Ref{Name: t.Secret.Name, UID: string(t.Secret.UID)}
	case t.Node != nil:
		private.Kubernetes.Node = &Ref{Name: t.Node.Name, UID: string(t.Node.UID)}
	}
	if t.WarnAfterSeconds != 0 {
		private.Kubernetes.WarnAfter = jwt.NewNumericDate(now.Add(time.Duration(t.WarnAfterSeconds) * time.Second))
	}
	return public, private, nil
}
