package admission

import (
	"context"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"
)

// StorageObjectInUseProtectionPluginName is the name Kubernetes gives this plugin.
const StorageObjectInUseProtectionPluginName = "StorageObjectInUseProtection"

// The finalizers that keep a claim while a pod uses it and a volume while a claim is bound to
// it; the pvc-protection and pv-protection controllers remove them.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

func registerStorageObjectInUseProtection(plugins *admission.Plugins) {
	plugins.Register(StorageObjectInUseProtectionPluginName, func(io.Reader) (admission.Interface, error) {
		return &storageProtection{Handler: admission.NewHandler(admission.Create)}, nil
	})
}

// storageProtection gives every new claim and volume its protection finalizer, as
// kube-apiserver's plugin of that name does by default.
type storageProtection struct {
	*admission.Handler
}

var _ admission.MutationInterface = &storageProtection{}

var (
	pvcResource = corev1.Resource("persistentvolumeclaims")
	pvResource  = corev1.Resource("persistentvolumes")
)

// Admit adds the finalizer to a created claim or volume that lacks it. An object of another
// type than the resource's is left alone, as upstream leaves it.
func (p *storageProtection) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	switch a.GetResource().GroupResource() {
	case pvcResource:
		if pvc, ok := a.GetObject().(*corev1.PersistentVolumeClaim); ok && !slices.Contains(pvc.Finalizers, PVCProtectionFinalizer) {
			klog.V(4).InfoS("Adding the PVC protection finalizer", "pvc", klog.KObj(pvc))
			pvc.Finalizers = append(pvc.Finalizers, PVCProtectionFinalizer)
		}
	case pvResource:
		if pv, ok := a.GetObject().(*corev1.PersistentVolume); ok && !slices.Contains(pv.Finalizers, PVProtectionFinalizer) {
			klog.V(4).InfoS("Adding the PV protection finalizer", "pv", klog.KObj(pv))
			pv.Finalizers = append(pv.Finalizers, PVProtectionFinalizer)
		}
	}
	return nil
}
