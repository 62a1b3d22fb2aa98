package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
	"time"

	"github.com/google/uuid"
	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
)

// Issuer signs tokens as one issuer (`iss`, the first --service-account-issuer).
type Issuer struct {
	issuer string
	signer jose.Signer
	now    func() time.Time
	newID  func() string
}

// NewIssuer returns an issuer signing with key: RS256 for an RSA key (berth's own), ES256/384/512
// for an ECDSA one, with the `kid` header KeyID gives its public half.
func NewIssuer(issuer string, key crypto.Signer) (*Issuer, error) {
	alg, err := algorithm(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{
		Algorithm: alg,
		Key:       &jose.JSONWebKey{Algorithm: string(alg), Key: key, KeyID: kid, Use: "sig"},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the token signer: %w", err)
	}
	return &Issuer{issuer: issuer, signer: signer, now: time.Now, newID: uuid.NewString}, nil
}

// Issue signs a token for t. It returns the token and its ID (`jti`).
func (i *Issuer) Issue(t Token) (token, jti string, err error) {
	jti = i.newID()
	public, private, err := claims(t, i.now(), jti)
	if err != nil {
		return "", "", err
	}
	public.Issuer = i.issuer
	token, err = jwt.Signed(i.signer).Claims(private).Claims(public).CompactSerialize()
	if err != nil {
		return "", "", fmt.Errorf("signing the token: %w", err)
	}
	return token, jti, nil
}

// algorithm is the signature algorithm of a public key, as kube-apiserver chooses it.
func algorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", fmt.Errorf("unknown private key curve, must be 256, 384, or 521")
	}
	return "", fmt.Errorf("unknown public key type %T, must be *rsa.PublicKey or *ecdsa.PublicKey", pub)
}
