// Package clustertrustbundle is the registry of certificates.k8s.io/v1 ClusterTrustBundles:
// cluster-scoped sets of trust anchors (CA certificates) that pods mount through projected
// volumes. A bundle that names a signer must be named "<signer with / as :>:<anything>", and
// writing it needs "attest" on that signer (the ClusterTrustBundleAttest admission plugin in
// pkg/apiserver/admission).
package clustertrustbundle

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// maxTrustBundleSize bounds spec.trustBundle, as upstream's: 1 MiB.
const maxTrustBundleSize = 1 << 20

// NewREST returns the clustertrustbundles endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       certificatesv1.Resource("clustertrustbundles"),
		Singular:       "clustertrustbundle",
		New:            func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} },
		NewList:        func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of ClusterTrustBundles.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return Validate(obj.(*certificatesv1.ClusterTrustBundle), true)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateUpdate(obj.(*certificatesv1.ClusterTrustBundle), old.(*certificatesv1.ClusterTrustBundle))
}

// Validate validates a bundle; parseBundle false skips the parsing of an unchanged bundle.
func Validate(b *certificatesv1.ClusterTrustBundle, parseBundle bool) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&b.ObjectMeta, false, nameValidator(b.Spec.SignerName), field.NewPath("metadata"))
	if b.Spec.SignerName != "" {
		errs = append(errs, certificates.ValidateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
	}
	if parseBundle {
		errs = append(errs, validateTrustBundle(field.NewPath("spec", "trustBundle"), b.Spec.TrustBundle)...)
	}
	return errs
}

// ValidateUpdate validates an update: the signer name is immutable.
func ValidateUpdate(b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
	errs := Validate(b, b.Spec.TrustBundle != old.Spec.TrustBundle)
	errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, apivalidation.ValidateImmutableField(b.Spec.SignerName, old.Spec.SignerName, field.NewPath("spec", "signerName"))...)
}

// nameValidator ties a bundle's name to its signer, so that RBAC on names can follow
// signers: a bundle without one must not look like it has one.
func nameValidator(signerName string) apivalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if signerName == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			return apivalidation.NameIsDNSSubdomain(name, prefix)
		}
		want := strings.ReplaceAll(signerName, "/", ":") + ":"
		if !strings.HasPrefix(name, want) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, want)}
		}
		return apivalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, want), prefix)
	}
}

// validateTrustBundle checks that the bundle is one or more distinct CA certificates in PEM.
func validateTrustBundle(path *field.Path, in string) field.ErrorList {
	if len(in) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(path, "", maxTrustBundleSize)}
	}
	var errs field.ErrorList
	seen := map[string][]int{}
	rest := []byte(in)
	for i := 0; ; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		var problem string
		switch {
		case b.Type != "CERTIFICATE":
			problem = fmt.Sprintf("entry %d has bad block type: %v", i, b.Type)
		case len(b.Headers) != 0:
			problem = fmt.Sprintf("entry %d has PEM block headers", i)
		default:
			cert, err := x509.ParseCertificate(b.Bytes)
			switch {
			case err != nil:
				problem = fmt.Sprintf("entry %d does not parse as X.509", i)
			case !cert.IsCA:
				problem = fmt.Sprintf("entry %d does not have the CA bit set", i)
			case !cert.BasicConstraintsValid:
				problem = fmt.Sprintf("entry %d has invalid basic constraints", i)
			}
		}
		if problem != "" {
			errs = append(errs, field.Invalid(path, "<value omitted>", problem))
			continue
		}
		seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
	}
	if len(errs) > 0 {
		return errs
	}
	if len(seen) == 0 {
		return field.ErrorList{field.Invalid(path, "<value omitted>", "at least one trust anchor must be provided")}
	}
	for _, idx := range seen {
		if len(idx) > 1 {
			errs = append(errs, field.Invalid(path, "<value omitted>", fmt.Sprintf("duplicate trust anchor (indices %v)", idx)))
		}
	}
	return errs
}

// Fields are the fields bundles can be selected by: metadata and spec.signerName.
func Fields(obj runtime.Object) fields.Set {
	b := obj.(*certificatesv1.ClusterTrustBundle)
	return generic.MergeFieldsSets(generic.ObjectMetaFieldsSet(&b.ObjectMeta, false),
		fields.Set{"spec.signerName": b.Spec.SignerName})
}

// NewTableConvertor returns the columns of `kubectl get clustertrustbundles`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*certificatesv1.ClusterTrustBundle] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "SignerName", Type: "string", Description: "The signer whose trust anchors the bundle holds, if any."},
	}, func(b *certificatesv1.ClusterTrustBundle, _ time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{b.Name, table.OrNone(b.Spec.SignerName)}}
	})
}
