// Package pki is berth's trust root: the cluster's certificate authority and
// the certificates it signs.
//
// `berth up` calls EnsureCA and then EnsureServing for the API server's
// serving certificate and EnsureClient for the identities of berth's own
// components; `berth kubeconfig` issues client certificates for users; node
// join issues each node its own client certificate. Every Ensure* call is
// idempotent across restarts: what is on disk and still fit for its purpose
// is reused, so kubeconfigs handed out earlier keep working.
//
// Keys are ECDSA P-256: quick to generate, and accepted by Go's TLS stack,
// kubectl and client-go.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/keyutil"
)

const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"

	// caValidity is long because replacing the root means handing out every
	// kubeconfig and node credential again.
	caValidity = 10 * 365 * 24 * time.Hour

	// clockSkew backdates NotBefore so that a machine whose clock is a little
	// behind the issuer's still accepts a freshly issued certificate.
	clockSkew = 5 * time.Minute
)

// CA is the cluster's certificate authority.
type CA struct {
	// Cert is the CA certificate.
	Cert *x509.Certificate
	// Key is the CA's private key; it signs every certificate berth issues.
	Key crypto.Signer
	// CertPEM is Cert as PEM, as it is on disk: the trust bundle that goes
	// into kubeconfigs and the API server's client-CA file.
	CertPEM []byte
}

// EnsureCA loads the CA from dir/ca.crt and dir/ca.key, or, when there is no
// ca.crt yet, generates a self-signed one named commonName, writes it there
// and returns it. An existing CA is returned as is, whatever its name, since
// replacing it would invalidate every credential it signed.
func EnsureCA(dir string, commonName string) (*CA, error) {
	return ensureCA(dir, caCertFile, caKeyFile, commonName)
}

// EnsureNamedCA is EnsureCA for a CA other than the cluster's, in dir/name.crt
// and dir/name.key (the front proxy's, front-proxy-ca, as kubeadm names it).
func EnsureNamedCA(dir, name, commonName string) (*CA, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("CA name %q is not a plain file name", name)
	}
	return ensureCA(dir, name+".crt", name+".key", commonName)
}

func ensureCA(dir, certFile, keyFile, commonName string) (*CA, error) {
	certPath := filepath.Join(dir, certFile)
	keyPath := filepath.Join(dir, keyFile)

	certPEM, err := os.ReadFile(certPath)
	switch {
	case err == nil:
		keyPEM, err := os.ReadFile(keyPath)
		if err != nil {
			// Never regenerate here: the certificate may already be trusted
			// by clients, and a new CA would lock them out without a word.
			return nil, fmt.Errorf("CA certificate %s exists but its key cannot be read: %w", certPath, err)
		}
		ca, err := parseCA(certPEM, keyPEM, time.Now())
		if err != nil {
			return nil, fmt.Errorf("loading CA from %s: %w", dir, err)
		}
		return ca, nil
	case errors.Is(err, fs.ErrNotExist):
		// Generate below. A key without its certificate (a crash between the
		// two writes) was never handed to anyone, so it is simply replaced.
	default:
		return nil, fmt.Errorf("reading CA certificate: %w", err)
	}

	if commonName == "" {
		return nil, errors.New("creating CA: common name is empty")
	}
	ca, keyPEM, err := newCA(commonName, time.Now())
	if err != nil {
		return nil, fmt.Errorf("creating CA: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating CA directory: %w", err)
	}
	// Key first: if we stop in between, the missing ca.crt makes the next
	// start generate afresh instead of finding a certificate with no key.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing CA key: %w", err)
	}
	if err := writeFileAtomic(certPath, ca.CertPEM, 0o644); err != nil {
		return nil, fmt.Errorf("writing CA certificate: %w", err)
	}
	return ca, nil
}

// newCA generates a key and a self-signed CA certificate for it.
func newCA(commonName string, now time.Time) (ca *CA, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	skid, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          skid,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing new CA certificate: %w", err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding CA key: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}, keyPEM, nil
}

// parseCA checks that certPEM and keyPEM form a usable CA at now.
func parseCA(certPEM, keyPEM []byte, now time.Time) (*CA, error) {
	pair, err := parseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cert := pair.Leaf
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, fmt.Errorf("certificate %q is not a CA", cert.Subject.CommonName)
	}
	if now.After(cert.NotAfter) {
		return nil, fmt.Errorf("CA certificate %q expired at %s", cert.Subject.CommonName, cert.NotAfter.Format(time.RFC3339))
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key of type %T cannot sign", pair.PrivateKey)
	}
	return &CA{Cert: cert, Key: signer, CertPEM: certPEM}, nil
}

// parseKeyPair parses a PEM certificate and key, checks that they belong
// together, and makes sure Leaf is set.
func parseKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("parsing certificate and key: %w", err)
	}
	if pair.Leaf == nil {
		// Only with GODEBUG=x509keypairleaf=0.
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("parsing certificate: %w", err)
		}
	}
	return pair, nil
}
