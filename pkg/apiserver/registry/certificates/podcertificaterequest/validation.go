package podcertificaterequest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates"
)

// Limits, as upstream's.
const (
	maxStubPKCS10RequestSize = 10 * 1024
	maxCertificateChainSize  = 100 * 1024
	minMaxExpirationSeconds  = 60 * 60
	// Kubernetes' own signers issue for at most a day, others for at most 91 days.
	kubernetesMaxMaxExpirationSeconds = 24 * 60 * 60
	maxMaxExpirationSeconds           = 91 * 24 * 60 * 60
	maxUIDLength                      = 128
)

var (
	stubPath         = field.NewPath("spec", "stubPKCS10Request")
	chainPath        = field.NewPath("status", "certificateChain")
	notBeforePath    = field.NewPath("status", "notBefore")
	notAfterPath     = field.NewPath("status", "notAfter")
	beginRefreshPath = field.NewPath("status", "beginRefreshAt")
)

// ValidateCreate validates a new request.
func ValidateCreate(pcr *certificatesv1.PodCertificateRequest) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&pcr.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, certificates.ValidateSignerName(spec.Child("signerName"), pcr.Spec.SignerName)...)
	errs = append(errs, certificates.ValidateUserAnnotations(pcr.Spec.UnverifiedUserAnnotations, spec.Child("unverifiedUserAnnotations"))...)
	for _, n := range []struct {
		name, value string
	}{{"podName", pcr.Spec.PodName}, {"serviceAccountName", pcr.Spec.ServiceAccountName}, {"nodeName", string(pcr.Spec.NodeName)}} {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n.value, false) {
			errs = append(errs, field.Invalid(spec.Child(n.name), n.value, msg))
		}
	}
	for _, u := range []struct {
		name, value string
	}{{"podUID", string(pcr.Spec.PodUID)}, {"serviceAccountUID", string(pcr.Spec.ServiceAccountUID)}, {"nodeUID", string(pcr.Spec.NodeUID)}} {
		switch {
		case u.value == "":
			errs = append(errs, field.Invalid(spec.Child(u.name), u.value, "must not be empty"))
		case len(u.value) > maxUIDLength:
			errs = append(errs, field.TooLong(spec.Child(u.name), u.value, maxUIDLength))
		}
	}
	maxExp := spec.Child("maxExpirationSeconds")
	if pcr.Spec.MaxExpirationSeconds == nil {
		return append(errs, field.Required(maxExp, "must be set"))
	}
	hi := int32(maxMaxExpirationSeconds)
	if certificates.IsKubernetesSignerName(pcr.Spec.SignerName) {
		hi = kubernetesMaxMaxExpirationSeconds
	}
	if e := *pcr.Spec.MaxExpirationSeconds; e < minMaxExpirationSeconds || e > hi {
		errs = append(errs, field.Invalid(maxExp, e, fmt.Sprintf("must be in the range [%d, %d]", minMaxExpirationSeconds, hi)))
	}
	if len(pcr.Spec.StubPKCS10Request) == 0 {
		return append(errs, field.Required(stubPath, "must be set"))
	}
	return append(errs, validateStub(pcr.Spec.StubPKCS10Request)...)
}

// validateStub checks the stub request: its only use is to carry the pod's public key and
// prove the pod holds the private one, so the key type is limited and the signature checked.
func validateStub(der []byte) field.ErrorList {
	if len(der) > maxStubPKCS10RequestSize {
		return field.ErrorList{field.TooLong(stubPath, "", maxStubPKCS10RequestSize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	switch pub := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() && pub.Curve != elliptic.P521() {
			return field.ErrorList{field.Invalid(stubPath, "curve "+pub.Curve.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(stubPath, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	if err := req.CheckSignature(); err != nil {
		return field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "invalid signature")}
	}
	return nil
}

// ValidateUpdate validates an update of the request itself: the spec is immutable.
func ValidateUpdate(pcr, old *certificatesv1.PodCertificateRequest) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&pcr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, apivalidation.ValidateImmutableField(pcr.Spec, old.Spec, field.NewPath("spec"))...)
}

// terminal are the condition types a signer may set, exactly one of them, once.
var terminal = []string{certificatesv1.PodCertificateRequestConditionTypeIssued,
	certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed}

// ValidateStatusUpdate validates a signer's answer at now: one terminal condition, and for
// Issued a chain whose leaf holds the requested key, with times that match it.
func ValidateStatusUpdate(pcr, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&pcr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if len(errs) > 0 {
		return errs
	}
	conds := field.NewPath("status", "conditions")
	known := 0
	for i, c := range pcr.Status.Conditions {
		switch c.Type {
		case terminal[0], terminal[1], terminal[2]:
			known++
			if known > 1 {
				errs = append(errs, field.Invalid(conds.Index(i).Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if c.Status != metav1.ConditionTrue {
				errs = append(errs, field.NotSupported(conds.Index(i).Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
			}
		default:
			errs = append(errs, field.NotSupported(conds.Index(i).Child("type"), c.Type, terminal))
		}
	}
	errs = append(errs, metavalidation.ValidateConditions(pcr.Status.Conditions, conds)...)
	if len(errs) > 0 {
		return errs
	}
	status := field.NewPath("status")
	if terminalState(old) != "" {
		return unchanged(pcr.Status, old.Status, status, "immutable after PodCertificateRequest is issued, denied, or failed")
	}
	switch terminalState(pcr) {
	case "":
		return unchanged(pcr.Status, old.Status, status, `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`)
	case certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
		return unchanged(pcr.Status, certificatesv1.PodCertificateRequestStatus{Conditions: pcr.Status.Conditions}, status,
			"non-condition status fields must be empty when denying or failing the PodCertificateRequest")
	}
	return validateIssued(pcr, old, now)
}

func validateIssued(pcr, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	chain := pcr.Status.CertificateChain
	if len(chain) > maxCertificateChainSize {
		return field.ErrorList{field.TooLong(chainPath, "", maxCertificateChainSize)}
	}
	leafBlock, rest := pem.Decode([]byte(chain))
	if leafBlock == nil {
		return field.ErrorList{field.Invalid(chainPath, chain, "issued certificate chain must contain at least one certificate")}
	}
	if leafBlock.Type != "CERTIFICATE" {
		return field.ErrorList{field.Invalid(chainPath, chain, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")}
	}
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		return field.ErrorList{field.Invalid(chainPath, chain, "leaf certificate does not parse as valid X.509")}
	}
	var errs field.ErrorList
	for _, name := range leaf.DNSNames {
		if name == "" {
			errs = append(errs, field.Invalid(chainPath, name, "leaf certificate should not contain empty DNSName"))
		}
		if strings.Contains(name, "..") {
			errs = append(errs, field.Invalid(chainPath, name, "leaf certificate's DNSName should not contain '..'"))
		}
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			errs = append(errs, field.Invalid(chainPath, name, "leaf certificate's DNSName should not start or end with '.'"))
		}
	}
	for _, addr := range leaf.EmailAddresses {
		if _, err := mail.ParseAddress(addr); err != nil {
			errs = append(errs, field.Invalid(chainPath, addr, "leaf certificate should not contain invalid EmailAddress"))
		}
	}
	req, err := x509.ParseCertificateRequest(old.Spec.StubPKCS10Request)
	if err != nil {
		return append(errs, field.Invalid(stubPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR"))
	}
	// The keys' Equal takes a crypto.PublicKey, a type of its own: an interface of Equal(any)
	// would match none of them.
	if k, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(leaf.PublicKey) {
		return append(errs, field.Invalid(chainPath, chain, "leaf certificate was not issued to the requested public key"))
	}
	st := pcr.Status
	if st.NotBefore == nil {
		errs = append(errs, field.Required(notBeforePath, "must be present and consistent with the issued certificate"))
	}
	if st.NotAfter == nil {
		errs = append(errs, field.Required(notAfterPath, "must be present and consistent with the issued certificate"))
	}
	if st.BeginRefreshAt == nil {
		errs = append(errs, field.Required(beginRefreshPath, "must be present and in the range [notbefore+10min, notafter-10min]"))
	}
	if len(errs) > 0 {
		return errs
	}
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	switch {
	case !st.NotBefore.Time.Equal(leaf.NotBefore):
		return field.ErrorList{field.Invalid(notBeforePath, st.NotBefore.Time, "must be set to the NotBefore time encoded in the leaf certificate")}
	case !near(st.NotBefore.Time, now, 5*time.Minute):
		return field.ErrorList{field.Invalid(notBeforePath, st.NotBefore.Time, "must be set to within 5 minutes of kube-apiserver's current time")}
	case !st.NotAfter.Time.Equal(leaf.NotAfter):
		return field.ErrorList{field.Invalid(notAfterPath, st.NotAfter.Time, "must be set to the NotAfter time encoded in the leaf certificate")}
	case lifetime < time.Hour:
		return field.ErrorList{field.Invalid(chainPath, lifetime, "leaf certificate lifetime must be >= 1 hour")}
	case pcr.Spec.MaxExpirationSeconds != nil && lifetime > time.Duration(*pcr.Spec.MaxExpirationSeconds)*time.Second:
		return field.ErrorList{field.Invalid(chainPath, lifetime, fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", *pcr.Spec.MaxExpirationSeconds))}
	case st.BeginRefreshAt.Time.Before(st.NotBefore.Time.Add(10 * time.Minute)):
		return field.ErrorList{field.Invalid(beginRefreshPath, st.BeginRefreshAt.Time, "must be at least 10 minutes after status.notBefore")}
	case st.BeginRefreshAt.Time.After(st.NotAfter.Time.Add(-10 * time.Minute)):
		return field.ErrorList{field.Invalid(beginRefreshPath, st.BeginRefreshAt.Time, "must be at least 10 minutes before status.notAfter")}
	}
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil
		}
		if b.Type != "CERTIFICATE" {
			return field.ErrorList{field.Invalid(chainPath, chain, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")}
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return field.ErrorList{field.Invalid(chainPath, chain, "intermediate certificate does not parse as valid X.509")}
		}
	}
}

// terminalState is the type of the request's true terminal condition, or "".
func terminalState(pcr *certificatesv1.PodCertificateRequest) string {
	for _, c := range pcr.Status.Conditions {
		for _, t := range terminal {
			if c.Type == t && c.Status == metav1.ConditionTrue {
				return t
			}
		}
	}
	return ""
}

func unchanged(got, want certificatesv1.PodCertificateRequestStatus, path *field.Path, detail string) field.ErrorList {
	if apiequality.Semantic.DeepEqual(got, want) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, field.OmitValueType{}, detail)}
}

func near(a, b time.Time, skew time.Duration) bool {
	return a.After(b.Add(-skew)) && a.Before(b.Add(skew))
}
