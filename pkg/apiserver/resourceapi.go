package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/deviceclass"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/devicetaintrule"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/resourceclaim"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/resourceclaimtemplate"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/resourceslice"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storagemigration/storageversionmigration"
)

// addResourceDefaults registers the defaults of resource.k8s.io/v1 (requests of one
// device, taints' times) and the fields ResourceSlices are selected by; the other kinds of
// the group, and storagemigration.k8s.io/v1, are selected by metadata only.
func addResourceDefaults(s *runtime.Scheme) {
	addDefaults(s, resourceclaim.SetDefaults, func(l *resourcev1.ResourceClaimList) []resourcev1.ResourceClaim { return l.Items })
	addDefaults(s, resourceclaimtemplate.SetDefaults, func(l *resourcev1.ResourceClaimTemplateList) []resourcev1.ResourceClaimTemplate { return l.Items })
	addDefaults(s, resourceslice.SetDefaults, func(l *resourcev1.ResourceSliceList) []resourcev1.ResourceSlice { return l.Items })
	addDefaults(s, devicetaintrule.SetDefaults, func(l *resourcev1.DeviceTaintRuleList) []resourcev1.DeviceTaintRule { return l.Items })
	utilruntime.Must(s.AddFieldLabelConversionFunc(resourcev1.SchemeGroupVersion.WithKind("ResourceSlice"),
		registry.FieldLabelConversion(resourceslice.Fields, &resourcev1.ResourceSlice{})))
}

// resourceGroups builds the groups a v1.37 kube-apiserver serves by default for dynamic
// resource allocation (resource.k8s.io/v1) and storage version migration
// (storagemigration.k8s.io/v1, GA and on in 1.37), in the shape of installAPIs' list.
// Claims and templates read namespaces (their admin-access label) through the namespaces
// endpoint; claims' status writes are authorized by authz.
func resourceGroups(getter generic.RESTOptionsGetter, namespaces rest.Getter, authz authorizer.Authorizer) ([]struct {
	group, version string
	storage        map[string]rest.Storage
}, error) {
	getNamespace := func(ctx context.Context, name string) (*corev1.Namespace, error) {
		obj, err := namespaces.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		ns, ok := obj.(*corev1.Namespace)
		if !ok {
			return nil, fmt.Errorf("reading namespace %s: got a %T", name, obj)
		}
		return ns, nil
	}
	classes, err := deviceclass.NewREST(getter)
	if err != nil {
		return nil, err
	}
	taintRules, err := devicetaintrule.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	claims, err := resourceclaim.NewStorage(getter, getNamespace, authz)
	if err != nil {
		return nil, err
	}
	templates, err := resourceclaimtemplate.NewREST(getter, getNamespace)
	if err != nil {
		return nil, err
	}
	slices, err := resourceslice.NewREST(getter)
	if err != nil {
		return nil, err
	}
	migrations, err := storageversionmigration.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	return []struct {
		group, version string
		storage        map[string]rest.Storage
	}{
		{resourcev1.GroupName, "v1", map[string]rest.Storage{
			"deviceclasses":           classes,
			"devicetaintrules":        taintRules.DeviceTaintRule,
			"devicetaintrules/status": taintRules.Status,
			"resourceclaims":          claims.ResourceClaim,
			"resourceclaims/status":   claims.Status,
			"resourceclaimtemplates":  templates,
			"resourceslices":          slices,
		}},
		{storagemigrationv1.GroupName, "v1", map[string]rest.Storage{
			"storageversionmigrations":        migrations.StorageVersionMigration,
			"storageversionmigrations/status": migrations.Status,
		}},
	}, nil
}
