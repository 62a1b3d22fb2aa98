package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/keyutil"
)

const (
	// serviceAccountKeyFile and serviceAccountPubFile are kubeadm's names for the key that
	// signs service-account tokens and its public half.
	serviceAccountKeyFile = "sa.key"
	serviceAccountPubFile = "sa.pub"
	// serviceAccountKeyBits is kubeadm's size: tokens are RS256, which every JWT library
	// verifies.
	serviceAccountKeyBits = 2048
)

// EnsureServiceAccountKey loads or, at first start, generates the RSA key that signs
// service-account tokens (dir/sa.key) and writes its public half beside it (dir/sa.pub).
// The key is kept across restarts: replacing it would invalidate every token issued.
func EnsureServiceAccountKey(dir string) (keyFile, pubFile string, err error) {
	keyFile = filepath.Join(dir, serviceAccountKeyFile)
	pubFile = filepath.Join(dir, serviceAccountPubFile)
	keyPEM, err := os.ReadFile(keyFile)
	var key *rsa.PrivateKey
	switch {
	case err == nil:
		parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
		if err != nil {
			return "", "", fmt.Errorf("loading the service-account key %s: %w", keyFile, err)
		}
		var ok bool
		if key, ok = parsed.(*rsa.PrivateKey); !ok {
			return "", "", fmt.Errorf("the service-account key %s is a %T, not an RSA key", keyFile, parsed)
		}
	case errors.Is(err, fs.ErrNotExist):
		if key, err = rsa.GenerateKey(rand.Reader, serviceAccountKeyBits); err != nil {
			return "", "", fmt.Errorf("generating the service-account key: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", "", fmt.Errorf("creating %s: %w", dir, err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: keyutil.RSAPrivateKeyBlockType, Bytes: x509.MarshalPKCS1PrivateKey(key)})
		if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
			return "", "", fmt.Errorf("writing the service-account key: %w", err)
		}
	default:
		return "", "", fmt.Errorf("reading the service-account key: %w", err)
	}
	// The public key is derived each time, so a lost or stale sa.pub heals itself.
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("encoding the service-account public key: %w", err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: der})
	if old, err := os.ReadFile(pubFile); err != nil || string(old) != string(pubPEM) {
		if err := writeFileAtomic(pubFile, pubPEM, 0o644); err != nil {
			return "", "", fmt.Errorf("writing the service-account public key: %w", err)
		}
	}
	return keyFile, pubFile, nil
}
