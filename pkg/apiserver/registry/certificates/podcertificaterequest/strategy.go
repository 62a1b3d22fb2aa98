// Package podcertificaterequest is the registry of certificates.k8s.io/v1
// PodCertificateRequests: a node agent asks, for one of its pods, a signer for a certificate
// for the pod's service account; the signer answers in status (Issued with the chain, or
// Denied, or Failed), once. Writing status needs "sign" on the request's signer, checked by
// the status strategy as upstream's.
//
// Left out, as berth's node agent does not yet project pod certificates: the NodeRestriction
// checks that a node asks only for its own pods.
package podcertificaterequest

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage holds the endpoints of PodCertificateRequests.
type Storage struct {
	PodCertificateRequest *registry.Resource
	Status                *registry.SubresourceREST
}

// NewStorage returns podcertificaterequests and podcertificaterequests/status; authz decides
// who may sign.
func NewStorage(getter generic.RESTOptionsGetter, authz authorizer.Authorizer) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       certificatesv1.Resource("podcertificaterequests"),
		Singular:       "podcertificaterequest",
		New:            func() runtime.Object { return &certificatesv1.PodCertificateRequest{} },
		NewList:        func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		PodCertificateRequest: &registry.Resource{Store: store},
		Status:                registry.NewSubresourceREST(store, NewStatusStrategy(authz, clock.RealClock{})),
	}, nil
}

// SetDefaults defaults spec.maxExpirationSeconds to a day, as upstream's.
func SetDefaults(pcr *certificatesv1.PodCertificateRequest) {
	if pcr.Spec.MaxExpirationSeconds == nil {
		pcr.Spec.MaxExpirationSeconds = ptr.To[int32](86400)
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of PodCertificateRequests.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// AllowUnconditionalUpdate is false: the request is a one-shot protocol with its signer.
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*certificatesv1.PodCertificateRequest).Status = certificatesv1.PodCertificateRequestStatus{}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*certificatesv1.PodCertificateRequest).Status = old.(*certificatesv1.PodCertificateRequest).Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateCreate(obj.(*certificatesv1.PodCertificateRequest))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateUpdate(obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(certificatesv1.SchemeGroupVersion, "status")
}

type statusStrategy struct {
	strategy
	authz authorizer.Authorizer
	clock clock.PassiveClock
}

// NewStatusStrategy is the strategy of podcertificaterequests/status: status only, by a
// user who may sign for the request's signer.
func NewStatusStrategy(authz authorizer.Authorizer, clk clock.PassiveClock) registry.SubresourceStrategy {
	return statusStrategy{Strategy, authz, clk}
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pcr, oldPCR := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
	pcr.Spec = oldPCR.Spec
	metav1.ResetObjectMetaForStatus(&pcr.ObjectMeta, &oldPCR.ObjectMeta)
}

func (s statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	pcr, oldPCR := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
	if errs := ValidateStatusUpdate(pcr, oldPCR, s.clock.Now()); len(errs) > 0 {
		return errs
	}
	if apiequality.Semantic.DeepEqual(oldPCR.Status, pcr.Status) {
		return nil
	}
	signer := field.NewPath("spec", "signerName")
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return field.ErrorList{field.InternalError(signer, fmt.Errorf(`cannot determine calling user to perform "sign" check`))}
	}
	if s.authz == nil || !certificates.AuthorizedForSigner(ctx, s.authz, u, "sign", oldPCR.Spec.SignerName) {
		return field.ErrorList{field.Forbidden(signer, fmt.Sprintf(`User %q is not permitted to "sign" for signer %q`, u.GetName(), oldPCR.Spec.SignerName))}
	}
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(certificatesv1.SchemeGroupVersion, "metadata", "spec")
}

// Fields are the fields requests can be selected by: metadata, the signer, the pod and the
// node (a node agent watches its own).
func Fields(obj runtime.Object) fields.Set {
	pcr := obj.(*certificatesv1.PodCertificateRequest)
	return generic.MergeFieldsSets(generic.ObjectMetaFieldsSet(&pcr.ObjectMeta, true), fields.Set{
		"spec.signerName": pcr.Spec.SignerName,
		"spec.podName":    pcr.Spec.PodName,
		"spec.nodeName":   string(pcr.Spec.NodeName),
	})
}

// NewTableConvertor returns the columns of `kubectl get podcertificaterequests`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*certificatesv1.PodCertificateRequest] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "PodName", Type: "string", Description: "The pod the certificate is for."},
		{Name: "ServiceAccountName", Type: "string", Description: "The pod's service account."},
		{Name: "NodeName", Type: "string", Description: "The node of the pod."},
		{Name: "SignerName", Type: "string", Description: "The signer asked."},
		{Name: "State", Type: "string", Description: "Is the request Pending, Issued, Denied, or Failed?"},
		{Name: "UnverifiedUserAnnotations", Type: "string", Priority: 1, Description: "The pod's annotations for the signer, unverified."},
	}, func(pcr *certificatesv1.PodCertificateRequest, _ time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{pcr.Name, pcr.Spec.PodName, pcr.Spec.ServiceAccountName, string(pcr.Spec.NodeName),
			pcr.Spec.SignerName, State(pcr), labels.FormatLabels(pcr.Spec.UnverifiedUserAnnotations)}}
	})
}

// State is the request's STATE cell.
func State(pcr *certificatesv1.PodCertificateRequest) string {
	state := "Pending"
	for _, c := range pcr.Status.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied,
			certificatesv1.PodCertificateRequestConditionTypeFailed:
			state = c.Type
		}
	}
	return state
}
