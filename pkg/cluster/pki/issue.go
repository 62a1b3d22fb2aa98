package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// IssueServing issues a TLS server certificate for dnsNames and ips, valid
// for validity (cut short at the CA's own expiry), with a fresh key.
func (ca *CA) IssueServing(commonName string, dnsNames []string, ips []net.IP, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if len(dnsNames) == 0 && len(ips) == 0 {
		// Go and kubectl ignore the common name when checking a server's
		// name, so a certificate without SANs could never be verified.
		return nil, nil, fmt.Errorf("serving certificate %q: no DNS names or IP addresses", commonName)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	certPEM, keyPEM, err = ca.issue(tmpl, validity, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("serving certificate %q: %w", commonName, err)
	}
	return certPEM, keyPEM, nil
}

// IssueClient issues a TLS client certificate for the user commonName in
// groups, valid for validity (cut short at the CA's own expiry), with a fresh
// key. The API server's x509 authenticator reads the user name from the
// common name and the groups from the organizations.
func (ca *CA) IssueClient(commonName string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	certPEM, keyPEM, err = ca.issue(tmpl, validity, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("client certificate %q: %w", commonName, err)
	}
	return certPEM, keyPEM, nil
}

// issue completes tmpl (serial, validity, key usage, key IDs), signs it with
// a new key and returns both as PEM.
func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration, now time.Time) (certPEM, keyPEM []byte, err error) {
	if tmpl.Subject.CommonName == "" {
		return nil, nil, errors.New("common name is empty")
	}
	if validity <= 0 {
		return nil, nil, fmt.Errorf("validity %s is not positive", validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	if tmpl.SubjectKeyId, err = subjectKeyID(key.Public()); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore = now.Add(-clockSkew)
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		// Nothing verifies past the CA's expiry; do not pretend otherwise.
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	// ECDSA keys only sign; KeyEncipherment is for RSA key transport.
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	// AuthorityKeyId is filled in by CreateCertificate from the CA's
	// SubjectKeyId.
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// serialLimit keeps serial numbers to 128 random bits: unguessable, and well
// inside the 20 octets RFC 5280 allows.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 128)

// newSerial returns a random, positive serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	// Serial numbers must be positive (RFC 5280 section 4.1.2.2).
	return n.Add(n, big.NewInt(1)), nil
}

// subjectKeyID derives a key identifier as RFC 7093 section 2 method 1 does:
// the leftmost 160 bits of the SHA-256 hash of the subjectPublicKey bits.
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("marshalling public key: %w", err)
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		return nil, fmt.Errorf("parsing public key: %w", err)
	}
	sum := sha256.Sum256(spki.PublicKey.Bytes)
	return sum[:20], nil
}
