package certificatesigningrequest

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates"
)

// legacyUnknownSigner is v1beta1's default signer, refused by v1 for new requests.
const legacyUnknownSigner = "kubernetes.io/legacy-unknown"

// validUsages are the key usages a CSR may ask for, as Kubernetes lists them.
var validUsages = []string{
	string(certificatesv1.UsageAny), string(certificatesv1.UsageCRLSign), string(certificatesv1.UsageCertSign),
	string(certificatesv1.UsageClientAuth), string(certificatesv1.UsageCodeSigning), string(certificatesv1.UsageContentCommitment),
	string(certificatesv1.UsageDataEncipherment), string(certificatesv1.UsageDecipherOnly), string(certificatesv1.UsageDigitalSignature),
	string(certificatesv1.UsageEmailProtection), string(certificatesv1.UsageEncipherOnly), string(certificatesv1.UsageIPsecEndSystem),
	string(certificatesv1.UsageIPsecTunnel), string(certificatesv1.UsageIPsecUser), string(certificatesv1.UsageKeyAgreement),
	string(certificatesv1.UsageKeyEncipherment), string(certificatesv1.UsageMicrosoftSGC), string(certificatesv1.UsageNetscapeSGC),
	string(certificatesv1.UsageOCSPSigning), string(certificatesv1.UsageSMIME), string(certificatesv1.UsageServerAuth),
	string(certificatesv1.UsageSigning), string(certificatesv1.UsageTimestamping),
}

// options relax the rules for an update of what is already stored, so that data written
// under older rules stays writable; a create gets none of them.
type options struct {
	approvalConditions  bool // the approval subresource: Approved and Denied may change
	setCertificate      bool // the status subresource: the certificate may be set once
	approvedAndDenied   bool
	legacySigner        bool
	duplicateConditions bool
	emptyConditionType  bool
	anyCertificate      bool
	unknownUsages       bool
	duplicateUsages     bool
}

func optionsFor(csr, old *certificatesv1.CertificateSigningRequest) options {
	if old == nil {
		return options{}
	}
	return options{
		approvedAndDenied:   len(conditionIndices(old, certificatesv1.CertificateApproved)) > 0 && len(conditionIndices(old, certificatesv1.CertificateDenied)) > 0,
		legacySigner:        old.Spec.SignerName == legacyUnknownSigner,
		duplicateConditions: hasDuplicateConditionTypes(old),
		emptyConditionType:  len(conditionIndices(old, "")) > 0,
		anyCertificate:      bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || validateCertificate(old.Status.Certificate) != nil,
		unknownUsages:       slices.ContainsFunc(old.Spec.Usages, func(u certificatesv1.KeyUsage) bool { return !slices.Contains(validUsages, string(u)) }),
		duplicateUsages:     hasDuplicateUsages(old.Spec.Usages),
	}
}

// ValidateCreate validates a new CSR.
func ValidateCreate(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validate(csr, options{})
}

// ValidateUpdate validates an update through the main endpoint.
func ValidateUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateUpdate(csr, old, optionsFor(csr, old))
}

// ValidateStatusUpdate validates an update through the status subresource: the certificate
// may be set, once.
func ValidateStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := optionsFor(csr, old)
	o.setCertificate = true
	return validateUpdate(csr, old, o)
}

// ValidateApprovalUpdate validates an update through the approval subresource: Approved and
// Denied conditions may be added or changed.
func ValidateApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := optionsFor(csr, old)
	o.approvalConditions = true
	return validateUpdate(csr, old, o)
}

func validate(csr *certificatesv1.CertificateSigningRequest, o options) field.ErrorList {
	// Any name will do, as upstream's: CSRs have been named by clients' hashes and more.
	errs := apivalidation.ValidateObjectMeta(&csr.ObjectMeta, false, func(string, bool) []string { return nil }, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if err := checkRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	usages := spec.Child("usages")
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(usages, ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		if !o.unknownUsages && !slices.Contains(validUsages, string(u)) {
			errs = append(errs, field.NotSupported(usages.Index(i), u, validUsages))
		}
		if !o.duplicateUsages && seen[u] {
			errs = append(errs, field.Duplicate(usages.Index(i), u))
		}
		seen[u] = true
	}
	if !o.legacySigner && csr.Spec.SignerName == legacyUnknownSigner {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, certificates.ValidateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *e, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateConditions(field.NewPath("status", "conditions"), csr, o)...)
	if !o.anyCertificate {
		if err := validateCertificate(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

// checkRequest parses the PEM request and checks its signature: the requester holds the key.
func checkRequest(request []byte) error {
	req, err := certificates.ParseCSR(request)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// Approved, Denied and Failed conditions can only be true: they are facts, not states.
var trueOnly = []string{string(corev1.ConditionTrue)}

var anyStatus = []string{string(corev1.ConditionTrue), string(corev1.ConditionFalse), string(corev1.ConditionUnknown)}

func validateConditions(path *field.Path, csr *certificatesv1.CertificateSigningRequest, o options) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	var approved, denied bool
	for i, c := range csr.Status.Conditions {
		if !o.emptyConditionType && c.Type == "" {
			errs = append(errs, field.Required(path.Index(i).Child("type"), ""))
		}
		allowed := anyStatus
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			allowed = trueOnly
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(path.Index(i).Child("status"), ""))
		case !slices.Contains(allowed, string(c.Status)):
			errs = append(errs, field.NotSupported(path.Index(i).Child("status"), c.Status, allowed))
		}
		if !o.approvedAndDenied {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				approved = true
				if denied {
					errs = append(errs, field.Invalid(path, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				denied = true
				if approved {
					errs = append(errs, field.Invalid(path, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !o.duplicateConditions && seen[c.Type] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return errs
}

// validateCertificate checks status.certificate: empty, or PEM CERTIFICATE blocks only,
// without headers, each a parsable certificate.
func validateCertificate(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		blocks++
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

func validateUpdate(csr, old *certificatesv1.CertificateSigningRequest, o options) field.ErrorList {
	errs := validate(csr, o)
	conditions := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(conditionIndices(csr, t)) < len(conditionIndices(old, t)) {
			errs = append(errs, field.Forbidden(conditions, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !o.approvalConditions {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			oldC, newC := conditionsOf(old, t), conditionsOf(csr, t)
			switch {
			case len(newC) < len(oldC): // reported above
			case len(newC) > len(oldC):
				errs = append(errs, field.Forbidden(conditions, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(oldC, newC):
				errs = append(errs, field.Forbidden(conditions, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		switch {
		case !o.setCertificate:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	return append(errs, apivalidation.ValidateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
}

func conditionsOf(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

func hasDuplicateConditionTypes(csr *certificatesv1.CertificateSigningRequest) bool {
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range csr.Status.Conditions {
		if seen[c.Type] {
			return true
		}
		seen[c.Type] = true
	}
	return false
}

func hasDuplicateUsages(usages []certificatesv1.KeyUsage) bool {
	seen := map[certificatesv1.KeyUsage]bool{}
	for _, u := range usages {
		if seen[u] {
			return true
		}
		seen[u] = true
	}
	return false
}
