package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates"
)

// The names Kubernetes gives the certificate plugins.
const (
	CertificateApprovalPluginName           = "CertificateApproval"
	CertificateSigningPluginName            = "CertificateSigning"
	ClusterTrustBundleAttestPluginName      = "ClusterTrustBundleAttest"
	CertificateSubjectRestrictionPluginName = "CertificateSubjectRestriction"
)

var (
	csrResource = certificatesv1.Resource("certificatesigningrequests")
	ctbResource = certificatesv1.Resource("clustertrustbundles")
)

func registerCertificates(plugins *admission.Plugins) {
	plugins.Register(CertificateApprovalPluginName, func(io.Reader) (admission.Interface, error) {
		return &signerVerb{Handler: admission.NewHandler(admission.Update), name: CertificateApprovalPluginName, check: checkApproval}, nil
	})
	plugins.Register(CertificateSigningPluginName, func(io.Reader) (admission.Interface, error) {
		return &signerVerb{Handler: admission.NewHandler(admission.Update), name: CertificateSigningPluginName, check: checkSigning}, nil
	})
	plugins.Register(ClusterTrustBundleAttestPluginName, func(io.Reader) (admission.Interface, error) {
		return &signerVerb{Handler: admission.NewHandler(admission.Create, admission.Update), name: ClusterTrustBundleAttestPluginName, check: checkAttest}, nil
	})
	plugins.Register(CertificateSubjectRestrictionPluginName, func(io.Reader) (admission.Interface, error) {
		return &subjectRestriction{Handler: admission.NewHandler(admission.Create)}, nil
	})
}

// signerVerb is a plugin that lets a write through only if its user may do a verb on the
// signer the object names (the synthetic certificates.k8s.io "signers" resource): approve a
// CSR (CertificateApproval), sign one (CertificateSigning), or publish a signer's trust
// anchors (ClusterTrustBundleAttest). RBAC on the resource itself only says who may write
// it; these say for which signers.
type signerVerb struct {
	*admission.Handler
	name  string
	authz authorizer.UnconditionalAuthorizer
	// check returns the verb and signer the request needs, or "" when it needs none.
	check func(a admission.Attributes) (verb, signer string, err error)
}

var (
	_ admission.ValidationInterface                            = &signerVerb{}
	_ genericadmissioninitializer.WantsUnconditionalAuthorizer = &signerVerb{}
)

func (p *signerVerb) SetUnconditionalAuthorizer(a authorizer.UnconditionalAuthorizer) {
	p.authz = a
}

func (p *signerVerb) ValidateInitialization() error {
	if p.authz == nil {
		return fmt.Errorf("%s requires an authorizer", p.name)
	}
	return nil
}

func (p *signerVerb) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	verb, signer, err := p.check(a)
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if verb == "" {
		return nil
	}
	if !certificates.AuthorizedForSigner(ctx, p.authz, a.GetUserInfo(), verb, signer) {
		klog.FromContext(ctx).V(4).Info("User not permitted on a signer", "plugin", p.name, "user", a.GetUserInfo().GetName(), "verb", verb, "signer", signer, "name", a.GetName())
		switch verb {
		case "attest":
			return admission.NewForbidden(a, fmt.Errorf("user not permitted to attest for signerName %q", signer))
		default:
			return admission.NewForbidden(a, fmt.Errorf("user not permitted to %s requests with signerName %q", verb, signer))
		}
	}
	return nil
}

// checkApproval: any write to certificatesigningrequests/approval needs approve on the
// stored CSR's signer.
func checkApproval(a admission.Attributes) (string, string, error) {
	if a.GetSubresource() != "approval" || a.GetResource().GroupResource() != csrResource {
		return "", "", nil
	}
	old, ok := a.GetOldObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return "", "", fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetOldObject())
	}
	return "approve", old.Spec.SignerName, nil
}

// checkSigning: a write to certificatesigningrequests/status that changes the certificate or
// the conditions needs sign on the stored CSR's signer.
func checkSigning(a admission.Attributes) (string, string, error) {
	if a.GetSubresource() != "status" || a.GetResource().GroupResource() != csrResource {
		return "", "", nil
	}
	old, ok := a.GetOldObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return "", "", fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetOldObject())
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return "", "", fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetObject())
	}
	if reflect.DeepEqual(old.Status.Certificate, csr.Status.Certificate) && apiequality.Semantic.DeepEqual(old.Status.Conditions, csr.Status.Conditions) {
		return "", "", nil
	}
	return "sign", old.Spec.SignerName, nil
}

// checkAttest: writing a ClusterTrustBundle that names a signer needs attest on it, unless
// the update only touches what the garbage collector writes (owner references, finalizers).
func checkAttest(a admission.Attributes) (string, string, error) {
	if a.GetResource().GroupResource() != ctbResource || a.GetSubresource() != "" {
		return "", "", nil
	}
	b, ok := a.GetObject().(*certificatesv1.ClusterTrustBundle)
	if !ok {
		return "", "", fmt.Errorf("expected type ClusterTrustBundle, got: %T", a.GetObject())
	}
	if b.Spec.SignerName == "" {
		return "", "", nil
	}
	if a.GetOperation() == admission.Update {
		if old, ok := a.GetOldObject().(*certificatesv1.ClusterTrustBundle); ok && onlyGCFieldsChanged(b, old) {
			return "", "", nil
		}
	}
	return "attest", b.Spec.SignerName, nil
}

// onlyGCFieldsChanged reports whether two bundles differ at most in owner references and
// finalizers (and the fields the server sets).
func onlyGCFieldsChanged(b, old *certificatesv1.ClusterTrustBundle) bool {
	x, y := b.DeepCopy(), old.DeepCopy()
	for _, o := range []*certificatesv1.ClusterTrustBundle{x, y} {
		o.OwnerReferences, o.Finalizers, o.ManagedFields = nil, nil, nil
		o.ResourceVersion, o.Generation = "", 0
	}
	return apiequality.Semantic.DeepEqual(x, y)
}

// subjectRestriction refuses kube-apiserver-client CSRs for the group system:masters: a
// certificate in it bypasses every authorizer, and no approver should be able to mint one.
type subjectRestriction struct{ *admission.Handler }

var _ admission.ValidationInterface = &subjectRestriction{}

func (p *subjectRestriction) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != csrResource || a.GetSubresource() != "" {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetObject()))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to parse CSR: %w", err))
	}
	if slices.Contains(req.Subject.Organization, "system:masters") {
		klog.FromContext(ctx).V(4).Info("Refused a CSR for system:masters", "csr", csr.Name, "signer", csr.Spec.SignerName)
		return admission.NewForbidden(a, errors.New("use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"))
	}
	return nil
}
