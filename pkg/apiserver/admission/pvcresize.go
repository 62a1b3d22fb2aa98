package admission

import (
	"context"
	"errors"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// PersistentVolumeClaimResizePluginName is the name Kubernetes gives this plugin.
const PersistentVolumeClaimResizePluginName = "PersistentVolumeClaimResize"

// ExpansionPolicy answers whether the StorageClass of that name exists and allows volume
// expansion (its allowVolumeExpansion).
type ExpansionPolicy func(class string) bool

// noStorageClasses is the policy while berth serves no storage.k8s.io StorageClasses: no
// class exists, so none allows expansion, as kube-apiserver answers with none created.
func noStorageClasses(string) bool { return false }

func registerPersistentVolumeClaimResize(plugins *admission.Plugins) {
	plugins.Register(PersistentVolumeClaimResizePluginName, func(io.Reader) (admission.Interface, error) {
		return &pvcResize{Handler: admission.NewHandler(admission.Update), allowsExpansion: noStorageClasses}, nil
	})
}

// pvcResize refuses to grow a claim that is not bound, or whose StorageClass (the same before
// and after) does not allow expansion.
type pvcResize struct {
	*admission.Handler
	allowsExpansion ExpansionPolicy
}

var _ admission.ValidationInterface = &pvcResize{}

func (p *pvcResize) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != pvcResource || a.GetSubresource() != "" {
		return nil
	}
	pvc, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	old, ok := a.GetOldObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	oldSize, newSize := old.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return admission.NewForbidden(a, errors.New("Only bound persistent volume claims can be expanded")) // upstream's words
	}
	class, oldClass := volumehelpers.GetPersistentVolumeClaimClass(pvc), volumehelpers.GetPersistentVolumeClaimClass(old)
	if class == "" || class != oldClass || !p.allowsExpansion(class) {
		return admission.NewForbidden(a, errors.New("only dynamically provisioned pvc can be resized and "+
			"the storageclass that provisions the pvc must support resize"))
	}
	return nil
}
