package serviceaccount

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	"k8s.io/client-go/util/keyutil"
)

// PublicKey is a key tokens are verified with, under the key ID tokens signed by it carry.
type PublicKey struct {
	KeyID string
	Key   crypto.PublicKey
}

// KeyID is the `kid` kube-apiserver derives from a public key: the unpadded base64url
// SHA-256 of its PKIX DER encoding. Relying parties match a token to its JWKS entry by it.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// NewPublicKeys returns keys with their IDs, dropping repeats (the signing key's public half
// is often among the verification key files too).
func NewPublicKeys(keys ...crypto.PublicKey) ([]PublicKey, error) {
	var out []PublicKey
	seen := map[string]bool{}
	for _, k := range keys {
		if priv, ok := k.(interface{ Public() crypto.PublicKey }); ok {
			k = priv.Public()
		}
		id, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, PublicKey{KeyID: id, Key: k})
	}
	return out, nil
}

// LoadSigningKey reads a PEM private key (RSA or ECDSA, as --service-account-signing-key-file).
func LoadSigningKey(file string) (crypto.Signer, error) {
	key, err := keyutil.PrivateKeyFromFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the service-account signing key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the service-account signing key %s is a %T, which cannot sign", file, key)
	}
	return signer, nil
}

// LoadVerificationKeys reads every PEM public or private key (or certificate) in files, as
// --service-account-key-file does: each file may hold several.
func LoadVerificationKeys(files ...string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, f := range files {
		pubs, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading service-account verification keys: %w", err)
		}
		for _, p := range pubs {
			keys = append(keys, p)
		}
	}
	return keys, nil
}
