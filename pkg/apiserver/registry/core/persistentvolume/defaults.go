package persistentvolume

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolumeclaim"
)

// SetDefaults gives a volume upstream's v1 defaults: Pending, reclaimed by Retain, a Filesystem
// volume, its capacity rounded up to milli-units, and the defaults of its source (a hostPath
// of no type, RBD's pool, user and keyring, iSCSI's interface, Azure disk's caching, file
// system, mode and kind, ScaleIO's storage mode and file system).
func SetDefaults(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	persistentvolumeclaim.RoundUpQuantities(pv.Spec.Capacity)
	setSourceDefaults(&pv.Spec.PersistentVolumeSource)
}

func setSourceDefaults(s *corev1.PersistentVolumeSource) {
	if s.HostPath != nil && s.HostPath.Type == nil {
		s.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if rbd := s.RBD; rbd != nil {
		orDefault(&rbd.RBDPool, "rbd")
		orDefault(&rbd.RadosUser, "admin")
		orDefault(&rbd.Keyring, "/etc/ceph/keyring")
	}
	if s.ISCSI != nil {
		orDefault(&s.ISCSI.ISCSIInterface, "default")
	}
	if d := s.AzureDisk; d != nil {
		if d.CachingMode == nil {
			d.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
		}
		if d.FSType == nil {
			d.FSType = ptr.To("ext4")
		}
		if d.ReadOnly == nil {
			d.ReadOnly = ptr.To(false)
		}
		if d.Kind == nil {
			d.Kind = ptr.To(corev1.AzureSharedBlobDisk)
		}
	}
	if sio := s.ScaleIO; sio != nil {
		orDefault(&sio.StorageMode, "ThinProvisioned")
		orDefault(&sio.FSType, "xfs")
	}
}

func orDefault(s *string, value string) {
	if *s == "" {
		*s = value
	}
}
