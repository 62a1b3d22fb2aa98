// Package certificates holds what the registries of certificates.k8s.io/v1 share with each
// other and with the certificate admission plugins: the rules of a signer name, the parsing of
// a PEM certificate request, and the check that a user may approve, sign or attest for a
// signer (the synthetic "signers" resource of Kubernetes' authorization).
//
// The resources themselves live below: certificatesigningrequest, clustertrustbundle and
// podcertificaterequest.
package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
)

// IsKubernetesSignerName reports whether a signer is one of Kubernetes' own (its domain is
// kubernetes.io or a subdomain of it): those get tighter limits (a PodCertificateRequest's
// lifetime).
func IsKubernetesSignerName(signerName string) bool {
	host, _, _ := strings.Cut(signerName, "/")
	return host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io")
}

// ValidateSignerName checks that a signer name is "<domain>/<path>": a domain of two or
// more DNS labels, and a path of dot-separated DNS subdomains, in Kubernetes' words.
func ValidateSignerName(fldPath *field.Path, signerName string) field.ErrorList {
	if signerName == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	domain, path, ok := strings.Cut(signerName, "/")
	if !ok || strings.Contains(path, "/") {
		return field.ErrorList{field.Invalid(fldPath, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	const maxDomain = validation.DNS1123SubdomainMaxLength
	if len(domain) > maxDomain {
		errs = append(errs, field.TooLong(fldPath, "", maxDomain))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fldPath, domain, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break // one bad label says enough
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(fldPath, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(path, ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fldPath, path, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	maxName := maxDomain + validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 2
	if len(signerName) > maxName {
		errs = append(errs, field.TooLong(fldPath, "", maxName))
	}
	return errs
}

// ParseCSR decodes the PEM "CERTIFICATE REQUEST" block of a CertificateSigningRequest.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate request: %w", err)
	}
	return csr, nil
}

// AuthorizedForSigner reports whether u may verb ("approve", "sign", "attest") for
// signerName: on the signer itself, or on every signer of its domain ("example.com/*").
func AuthorizedForSigner(ctx context.Context, authz authorizer.UnconditionalAuthorizer, u user.Info, verb, signerName string) bool {
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		decision, reason, err := authz.Authorize(ctx, authorizer.AttributesRecord{
			User:            u,
			Verb:            verb,
			Name:            name,
			APIGroup:        "certificates.k8s.io",
			APIVersion:      "*",
			Resource:        "signers",
			ResourceRequest: true,
		})
		if err != nil {
			klog.FromContext(ctx).V(3).Info("Cannot authorize a signer", "verb", verb, "signer", name, "reason", reason, "err", err)
			continue
		}
		if decision == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}

// ValidateUserAnnotations checks the annotations a pod passes to a certificate's signer (a
// podCertificate volume's userAnnotations, a request's unverifiedUserAnnotations): keys
// prefixed with a domain, within the annotations' size limit.
func ValidateUserAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k := range annotations {
		// The case does not matter.
		errs = append(errs, validation.IsDomainPrefixedKey(fldPath, strings.ToLower(k))...)
	}
	if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil {
		errs = append(errs, field.TooLong(fldPath, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}
