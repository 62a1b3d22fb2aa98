package apiserver

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates/certificatesigningrequest"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates/clustertrustbundle"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates/podcertificaterequest"
)

// certificatesStorage builds the certificates.k8s.io/v1 endpoints a v1.37 kube-apiserver
// serves by default: CSRs with their status and approval, ClusterTrustBundles and
// PodCertificateRequests with their status (both GA, on by default, in 1.37). authz decides
// who may sign a PodCertificateRequest.
func certificatesStorage(getter generic.RESTOptionsGetter, authz authorizer.Authorizer) (map[string]rest.Storage, error) {
	csrs, err := certificatesigningrequest.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	bundles, err := clustertrustbundle.NewREST(getter)
	if err != nil {
		return nil, err
	}
	pcrs, err := podcertificaterequest.NewStorage(getter, authz)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{
		"certificatesigningrequests":          csrs.CertificateSigningRequest,
		"certificatesigningrequests/status":   csrs.Status,
		"certificatesigningrequests/approval": csrs.Approval,
		"clustertrustbundles":                 bundles,
		"podcertificaterequests":              pcrs.PodCertificateRequest,
		"podcertificaterequests/status":       pcrs.Status,
	}, nil
}
