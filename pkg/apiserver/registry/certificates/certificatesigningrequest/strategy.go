// Package certificatesigningrequest is the registry of certificates.k8s.io/v1
// CertificateSigningRequests: their validation, strategies, table and storage.
//
// A CSR's life, and who writes each step:
//
//	create (any user) ─► approval (approve on signers/<signerName>) ─► status (sign on signers/<signerName>)
//	spec.username etc.    Approved or Denied condition                   status.certificate, Failed
//	  set from the          (CertificateApproval admission)                (CertificateSigning admission)
//	  requester
//
// Each endpoint changes only its part: an update of the CSR itself changes metadata only, the
// approval subresource only the Approved and Denied conditions, and the status subresource the
// certificate and the other conditions. The checks of who may approve or sign are admission
// plugins (pkg/apiserver/admission), as Kubernetes has them.
package certificatesigningrequest

import (
	"context"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of CSRs.
type Storage struct {
	CertificateSigningRequest *registry.Resource
	Status                    *registry.SubresourceREST
	Approval                  *registry.SubresourceREST
}

// NewStorage returns the certificatesigningrequests endpoint and its status and approval
// subresources.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       certificatesv1.Resource("certificatesigningrequests"),
		Singular:       "certificatesigningrequest",
		New:            func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList:        func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		CertificateSigningRequest: &registry.Resource{Store: store, Short: []string{"csr"}},
		Status:                    registry.NewSubresourceREST(store, StatusStrategy),
		Approval:                  registry.NewSubresourceREST(store, ApprovalStrategy),
	}, nil
}

type strategy struct {
	registry.Strategy
	clock clock.PassiveClock // stamps the conditions' times
}

// Strategy is the create, update and delete strategy of CSRs.
var Strategy = strategy{registry.Base, clock.RealClock{}}

func (strategy) NamespaceScoped() bool { return false }

// PrepareForCreate records who asked (the signer and the approver trust these, never the
// request body) and starts with an empty status.
func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		csr.Spec.Username = u.GetName()
		csr.Spec.UID = u.GetUID()
		csr.Spec.Groups = u.GetGroups()
		if extra := u.GetExtra(); len(extra) > 0 {
			csr.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(extra))
			for k, v := range extra {
				csr.Spec.Extra[k] = v
			}
		}
	}
	csr.Status = certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{}}
}

// PrepareForUpdate keeps spec and status: through the main endpoint only metadata changes.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	csr.Spec = oldCSR.Spec
	csr.Status = oldCSR.Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateCreate(obj.(*certificatesv1.CertificateSigningRequest))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(certificatesv1.SchemeGroupVersion, "spec", "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of certificatesigningrequests/status: the signer's
// endpoint. It changes status.certificate and the conditions other than Approved and Denied,
// which it keeps as stored.
var StatusStrategy = statusStrategy{Strategy}

func (s statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	csr.Spec = oldCSR.Spec
	keepConditions(csr, oldCSR, certificatesv1.CertificateApproved)
	keepConditions(csr, oldCSR, certificatesv1.CertificateDenied)
	stampConditions(csr, oldCSR, s.clock.Now())
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateStatusUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(certificatesv1.SchemeGroupVersion, "spec", "status.conditions")
}

type approvalStrategy struct{ strategy }

// ApprovalStrategy is the update strategy of certificatesigningrequests/approval: the
// approver's endpoint. Only the conditions change; that only Approved and Denied may is
// validation's rule.
var ApprovalStrategy = approvalStrategy{Strategy}

func (s approvalStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	stampConditions(csr, oldCSR, s.clock.Now())
	conditions := csr.Status.Conditions
	csr.Spec = oldCSR.Spec
	csr.Status = oldCSR.Status
	csr.Status.Conditions = conditions
}

func (approvalStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateApprovalUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

func (approvalStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(certificatesv1.SchemeGroupVersion, "spec", "status.certificate")
}

// keepConditions puts the stored conditions of type t back in place of those the update
// sent, when it sent as many (a different count is validation's to refuse).
func keepConditions(csr, old *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) {
	oldIdx, newIdx := conditionIndices(old, t), conditionIndices(csr, t)
	if len(oldIdx) != len(newIdx) {
		return
	}
	for i, o := range oldIdx {
		csr.Status.Conditions[newIdx[i]] = old.Status.Conditions[o]
	}
}

func conditionIndices(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []int {
	var idx []int
	for i, c := range csr.Status.Conditions {
		if c.Type == t {
			idx = append(idx, i)
		}
	}
	return idx
}

// stampConditions fills the times a writer left out: lastUpdateTime is now, and
// lastTransitionTime is the stored condition's of the same type and status (no transition),
// else now.
func stampConditions(csr, old *certificatesv1.CertificateSigningRequest, now time.Time) {
	stamp := metav1.NewTime(now)
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = stamp
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = stamp
		for _, o := range old.Status.Conditions {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}

// Fields are the fields CSRs can be selected by: metadata and spec.signerName.
func Fields(obj runtime.Object) fields.Set {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	return generic.MergeFieldsSets(generic.ObjectMetaFieldsSet(&csr.ObjectMeta, false),
		fields.Set{"spec.signerName": csr.Spec.SignerName})
}

var _ rest.ResetFieldsStrategy = Strategy
