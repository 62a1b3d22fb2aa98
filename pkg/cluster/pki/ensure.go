package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

const (
	// leafValidity is how long certificates from EnsureServing and
	// EnsureClient last.
	leafValidity = 365 * 24 * time.Hour

	// renewBefore is how close to expiry a certificate on disk is replaced
	// rather than reused, so a cluster restarted now and then never runs on
	// an expired certificate.
	renewBefore = 30 * 24 * time.Hour
)

// EnsureServing makes sure dir/name.crt and dir/name.key hold a serving
// certificate with common name name, signed by ca, covering at least
// dnsNames and ips and valid for at least another 30 days. A pair on disk
// that meets all of that is reused; anything else (missing, unreadable, a
// key that does not match, another CA, a name or IP missing, near expiry)
// is replaced by a new pair.
func EnsureServing(dir, name string, ca *CA, dnsNames []string, ips []net.IP) (certFile, keyFile string, err error) {
	covers := func(cert *x509.Certificate) error { return coversNames(cert, dnsNames, ips) }
	issue := func() ([]byte, []byte, error) { return ca.IssueServing(name, dnsNames, ips, leafValidity) }
	return ensure(dir, name, ca, x509.ExtKeyUsageServerAuth, covers, issue)
}

// EnsureClient makes sure dir/name.crt and dir/name.key hold a client
// certificate for the user commonName in exactly groups (in any order),
// signed by ca and valid for at least another 30 days; otherwise it issues
// a new pair, as EnsureServing does.
func EnsureClient(dir, name string, ca *CA, commonName string, groups []string) (certFile, keyFile string, err error) {
	identifies := func(cert *x509.Certificate) error { return identifiesUser(cert, commonName, groups) }
	issue := func() ([]byte, []byte, error) { return ca.IssueClient(commonName, groups, leafValidity) }
	return ensure(dir, name, ca, x509.ExtKeyUsageClientAuth, identifies, issue)
}

// ensure reuses the pair dir/name.{crt,key} if it is valid under ca for
// usage and fits, and otherwise writes a new pair from issue.
func ensure(dir, name string, ca *CA, usage x509.ExtKeyUsage, fits func(*x509.Certificate) error, issue func() (certPEM, keyPEM []byte, err error)) (certFile, keyFile string, err error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return "", "", fmt.Errorf("certificate name %q is not a plain file name", name)
	}
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")

	why := reusable(certFile, keyFile, ca, usage, fits, time.Now())
	if why == nil {
		return certFile, keyFile, nil
	}
	klog.V(2).InfoS("Issuing certificate", "file", certFile, "reason", why.Error())

	certPEM, keyPEM, err := issue()
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("creating certificate directory: %w", err)
	}
	// Key first: if we stop in between, the old certificate no longer
	// matches the key, and the next call issues again.
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// reusable returns nil if the pair on disk can be used as it is at now, or
// else the reason it cannot.
func reusable(certFile, keyFile string, ca *CA, usage x509.ExtKeyUsage, fits func(*x509.Certificate) error, now time.Time) error {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	pair, err := parseKeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	cert := pair.Leaf
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}, CurrentTime: now}
	if _, err := cert.Verify(opts); err != nil {
		return fmt.Errorf("not valid under CA %q: %w", ca.Cert.Subject.CommonName, err)
	}
	if now.Add(renewBefore).After(cert.NotAfter) {
		return fmt.Errorf("expires soon, at %s", cert.NotAfter.Format(time.RFC3339))
	}
	return fits(cert)
}

// coversNames reports the first of dnsNames and ips that cert does not
// carry as a subject alternative name.
func coversNames(cert *x509.Certificate, dnsNames []string, ips []net.IP) error {
	for _, want := range dnsNames {
		// DNS names compare without regard to case (RFC 4343).
		if !slices.ContainsFunc(cert.DNSNames, func(have string) bool { return strings.EqualFold(have, want) }) {
			return fmt.Errorf("does not cover DNS name %q", want)
		}
	}
	for _, want := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, want.Equal) {
			return fmt.Errorf("does not cover IP address %s", want)
		}
	}
	return nil
}

// identifiesUser reports whether cert names the user commonName in exactly
// groups: an extra group would grant more than was asked for.
func identifiesUser(cert *x509.Certificate, commonName string, groups []string) error {
	if cert.Subject.CommonName != commonName {
		return fmt.Errorf("is for user %q, not %q", cert.Subject.CommonName, commonName)
	}
	have := slices.Compact(slices.Sorted(slices.Values(cert.Subject.Organization)))
	want := slices.Compact(slices.Sorted(slices.Values(groups)))
	if !slices.Equal(have, want) {
		return fmt.Errorf("has groups %q, not %q", have, want)
	}
	return nil
}
