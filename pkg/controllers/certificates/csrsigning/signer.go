// Package csrsigning is berth's CSR signing controller (kube-controller-manager's
// csrsigning): it issues the certificates of approved CertificateSigningRequests for
// Kubernetes' built-in signers with the cluster CA (--cluster-signing-cert-file and
// --cluster-signing-key-file).
//
// For each CSR it plans (a pure function of the CSR, its parsed request and the time) one of:
// nothing (not approved, already failed or issued, another signer's), fail (the request does
// not fit its signer: a Failed condition, for good), sign, or wait (the CA has expired:
// retried with back-off); then carries the plan out with one write to the status subresource.
package csrsigning

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math"
	"math/big"
	"os"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/certificates"
)

// Name is the controller's name in --controllers, logs and metrics.
const Name = "csrsigning"

// The signers this controller signs for, as kube-controller-manager's.
const legacyUnknownSigner = "kubernetes.io/legacy-unknown"

var signerNames = []string{
	certificatesv1.KubeAPIServerClientSignerName,
	certificatesv1.KubeAPIServerClientKubeletSignerName,
	certificatesv1.KubeletServingSignerName,
	legacyUnknownSigner,
}

const (
	// DefaultDuration is --cluster-signing-duration's default: a year.
	DefaultDuration = 365 * 24 * time.Hour
	// minDuration is the shortest certificate issued, whatever expirationSeconds asks.
	minDuration = 10 * time.Minute
	// backdate covers clocks behind the signer's; it must stay below minDuration.
	backdate = 5 * time.Minute
	// short is the duration below which backdating is not taken off the end: 5 minutes is
	// about 1% of 8 hours.
	short = 8 * time.Hour
)

// CA is the signing certificate and key.
type CA struct {
	Certificate *x509.Certificate
	Key         crypto.Signer
}

// LoadCA reads a PEM certificate and key, as --cluster-signing-cert-file and
// --cluster-signing-key-file name them.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certs, err := certutil.CertsFromFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading the signing certificate %s: %w", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the signing key %s: %w", keyFile, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the signing key %s cannot sign", keyFile)
	}
	return &CA{Certificate: certs[0], Key: signer}, nil
}

// NewController returns the signing controller: it signs with ca certificates of at most
// maxDuration (--cluster-signing-duration).
func NewController(client kubernetes.Interface, informer certinformers.CertificateSigningRequestInformer, ca *CA, maxDuration time.Duration) *certificates.Controller {
	s := &signer{client: client, ca: ca, maxDuration: maxDuration, clock: clock.RealClock{}}
	return certificates.New(Name, informer, s.handle)
}

type signer struct {
	client      kubernetes.Interface
	ca          *CA
	maxDuration time.Duration
	clock       clock.PassiveClock
}

// action is what the plan says to do with a CSR.
type action int

const (
	skip action = iota
	fail
	sign
	// wait is for a CA that has expired: an error, retried with back-off, as upstream's
	// (the request is not at fault).
	wait
)

// plan is the decision for one CSR.
type plan struct {
	action action
	// message is the Failed condition's, for fail.
	message string
	// notBefore and notAfter bound the certificate, for sign.
	notBefore, notAfter time.Time
}

// planFor decides what to do with csr, whose parsed request is req, at now; caNotAfter is
// when the CA expires. It does no I/O.
func planFor(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, now, caNotAfter time.Time, maxDuration time.Duration) plan {
	if len(csr.Status.Certificate) > 0 || !certificates.Approved(csr) || certificates.HasTrueCondition(csr, certificatesv1.CertificateFailed) ||
		!slices.Contains(signerNames, csr.Spec.SignerName) {
		return plan{action: skip}
	}
	if err := fitsSigner(csr, req); err != nil {
		return plan{action: fail, message: err.Error()}
	}
	ttl := duration(csr.Spec.ExpirationSeconds, maxDuration)
	p := plan{action: sign, notBefore: now.Add(-backdate), notAfter: now.Add(ttl)}
	if ttl >= short {
		p.notAfter = now.Add(ttl - backdate)
	}
	if !p.notAfter.Before(caNotAfter) {
		p.notAfter = caNotAfter // never outlive the CA
	}
	if !now.Before(caNotAfter) {
		return plan{action: wait, message: fmt.Sprintf("the signer has expired: NotAfter=%v", caNotAfter)}
	}
	return p
}

// fitsSigner checks a request against the rules of its signer.
func fitsSigner(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	usages := certificates.Usages(csr.Spec.Usages)
	switch csr.Spec.SignerName {
	case certificatesv1.KubeletServingSignerName:
		return certificates.ValidateKubeletServingCSR(req, usages)
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return certificates.ValidateKubeletClientCSR(req, usages)
	case certificatesv1.KubeAPIServerClientSignerName:
		return clientUsages(csr.Spec.Usages)
	}
	return nil // legacy-unknown signs what it is given, as upstream's
}

// clientUsages checks the usages of a kube-apiserver-client certificate: client auth, and
// at most digital signature and key encipherment beside it.
func clientUsages(usages []certificatesv1.KeyUsage) error {
	hasClientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			hasClientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !hasClientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

// duration is the certificate's lifetime: expirationSeconds within [10 min, maxDuration],
// else maxDuration.
func duration(expirationSeconds *int32, maxDuration time.Duration) time.Duration {
	if expirationSeconds == nil {
		return maxDuration
	}
	return min(max(time.Duration(*expirationSeconds)*time.Second, minDuration), maxDuration)
}

func (s *signer) handle(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (time.Duration, error) {
	if len(csr.Status.Certificate) > 0 || !certificates.Approved(csr) {
		return 0, nil // cheap exits before parsing
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return 0, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err)
	}
	p := planFor(csr, req, s.clock.Now(), s.ca.Certificate.NotAfter, s.maxDuration)
	switch p.action {
	case skip:
		return 0, nil
	case wait:
		return 0, fmt.Errorf("error auto signing csr %q: %s", csr.Name, p.message)
	case fail:
		klog.FromContext(ctx).V(2).Info("Refusing to sign a certificate request", "csr", csr.Name, "signer", csr.Spec.SignerName, "reason", p.message)
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateFailed,
			Status:         corev1.ConditionTrue,
			Reason:         "SignerValidationFailure",
			Message:        p.message,
			LastUpdateTime: metav1.NewTime(s.clock.Now()),
		})
		if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("error adding failure condition for csr: %w", err)
		}
		return 0, nil
	}
	der, err := s.ca.Sign(req, csr.Spec.Usages, p.notBefore, p.notAfter)
	if err != nil {
		return 0, fmt.Errorf("error auto signing csr: %w", err)
	}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("error updating signature for csr: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Signed a certificate request", "csr", csr.Name, "signer", csr.Spec.SignerName, "notAfter", p.notAfter)
	return 0, nil
}

// Sign issues a certificate for req between notBefore and notAfter with usages. The
// subject and names are the request's; extensions beyond those are not copied, and the
// certificate is never a CA.
func (ca *CA) Sign(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, notBefore, notAfter time.Time) ([]byte, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("unable to verify certificate request signature: %w", err)
	}
	keyUsage, extKeyUsage, err := x509Usages(usages)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).SetInt64(math.MaxInt64))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		PublicKeyAlgorithm:    req.PublicKeyAlgorithm,
		PublicKey:             req.PublicKey,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           extKeyUsage,
		BasicConstraintsValid: true,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Certificate, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate: %w", err)
	}
	return der, nil
}

var keyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// x509Usages maps a CSR's usages to the certificate's key and extended key usages, the
// latter sorted and without duplicates.
func x509Usages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	var unknown []certificatesv1.KeyUsage
	for _, u := range usages {
		if v, ok := keyUsages[u]; ok {
			ku |= v
		} else if v, ok := extKeyUsages[u]; ok {
			if !slices.Contains(eku, v) {
				eku = append(eku, v)
			}
		} else {
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		return 0, nil, fmt.Errorf("unrecognized usage values: %q", unknown)
	}
	slices.Sort(eku)
	return ku, eku, nil
}
