package persistentvolume

import (
	"net"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file validates a volume's source: exactly one, with each kind's required fields, as
// upstream's ValidatePersistentVolumeSpec does, its field paths included (a GCE disk's
// errors are reported under "persistentDisk", a CephFS one's under "cephfs").

// source is one kind of volume source: whether it is set, the paths of "more than one" and
// of its own errors, and its check.
type source struct {
	name, errPath string
	set           bool
	// counted sources never report being one too many (upstream's flexVolume), but count.
	neverForbidden bool
	validate       func(*field.Path) field.ErrorList
}

// validateSource requires exactly one source, in upstream's order; the first one set is
// validated and every later one is an error.
func validateSource(s *corev1.PersistentVolumeSource, pvName string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	found := 0
	for _, src := range sources(s, pvName) {
		switch {
		case !src.set:
			continue
		case found > 0 && !src.neverForbidden:
			errs = append(errs, field.Forbidden(fldPath.Child(src.name), "may not specify more than 1 volume type"))
			continue
		}
		found++
		errPath := src.errPath
		if errPath == "" {
			errPath = src.name
		}
		errs = append(errs, src.validate(fldPath.Child(errPath))...)
	}
	if found == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	}
	return errs
}

func sources(s *corev1.PersistentVolumeSource, pvName string) []source {
	return []source{
		{name: "hostPath", set: s.HostPath != nil, validate: func(p *field.Path) field.ErrorList { return validateHostPath(s.HostPath, p) }},
		{name: "gcePersistentDisk", errPath: "persistentDisk", set: s.GCEPersistentDisk != nil, validate: func(p *field.Path) field.ErrorList {
			return diskWithPartition(p, "pdName", s.GCEPersistentDisk.PDName, s.GCEPersistentDisk.Partition)
		}},
		{name: "awsElasticBlockStore", set: s.AWSElasticBlockStore != nil, validate: func(p *field.Path) field.ErrorList {
			return diskWithPartition(p, "volumeID", s.AWSElasticBlockStore.VolumeID, s.AWSElasticBlockStore.Partition)
		}},
		{name: "glusterfs", set: s.Glusterfs != nil, validate: func(p *field.Path) field.ErrorList { return validateGlusterfs(s.Glusterfs, p) }},
		{name: "flocker", set: s.Flocker != nil, validate: func(p *field.Path) field.ErrorList { return validateFlocker(s.Flocker, p) }},
		{name: "nfs", set: s.NFS != nil, validate: func(p *field.Path) field.ErrorList {
			errs := required(p, "server", s.NFS.Server, "path", s.NFS.Path)
			if !path.IsAbs(s.NFS.Path) {
				errs = append(errs, field.Invalid(p.Child("path"), s.NFS.Path, "must be an absolute path"))
			}
			return errs
		}},
		{name: "rbd", set: s.RBD != nil, validate: func(p *field.Path) field.ErrorList {
			errs := requiredList(p.Child("monitors"), s.RBD.CephMonitors)
			return append(errs, required(p, "image", s.RBD.RBDImage)...)
		}},
		{name: "quobyte", set: s.Quobyte != nil, validate: func(p *field.Path) field.ErrorList { return validateQuobyte(s.Quobyte, p) }},
		{name: "cephFS", errPath: "cephfs", set: s.CephFS != nil, validate: func(p *field.Path) field.ErrorList {
			return requiredList(p.Child("monitors"), s.CephFS.Monitors)
		}},
		{name: "iscsi", set: s.ISCSI != nil, validate: func(p *field.Path) field.ErrorList { return validateISCSI(s.ISCSI, pvName, p) }},
		{name: "cinder", set: s.Cinder != nil, validate: func(p *field.Path) field.ErrorList {
			errs := required(p, "volumeID", s.Cinder.VolumeID)
			if r := s.Cinder.SecretRef; r != nil {
				errs = append(errs, required(p.Child("secretRef"), "name", r.Name, "namespace", r.Namespace)...)
			}
			return errs
		}},
		{name: "fc", set: s.FC != nil, validate: func(p *field.Path) field.ErrorList { return validateFC(s.FC, p) }},
		{name: "flexVolume", set: s.FlexVolume != nil, neverForbidden: true, validate: func(p *field.Path) field.ErrorList {
			return validateFlex(s.FlexVolume, p)
		}},
		{name: "azureFile", set: s.AzureFile != nil, validate: func(p *field.Path) field.ErrorList {
			errs := required(p, "secretName", s.AzureFile.SecretName, "shareName", s.AzureFile.ShareName)
			if ns := s.AzureFile.SecretNamespace; ns != nil && *ns == "" {
				errs = append(errs, field.Required(p.Child("secretNamespace"), ""))
			}
			return errs
		}},
		{name: "vsphereVolume", set: s.VsphereVolume != nil, validate: func(p *field.Path) field.ErrorList {
			return required(p, "volumePath", s.VsphereVolume.VolumePath)
		}},
		{name: "photonPersistentDisk", set: s.PhotonPersistentDisk != nil, validate: func(p *field.Path) field.ErrorList {
			return required(p, "pdID", s.PhotonPersistentDisk.PdID)
		}},
		{name: "portworxVolume", set: s.PortworxVolume != nil, validate: func(p *field.Path) field.ErrorList {
			return required(p, "volumeID", s.PortworxVolume.VolumeID)
		}},
		{name: "azureDisk", set: s.AzureDisk != nil, validate: func(p *field.Path) field.ErrorList { return validateAzureDisk(s.AzureDisk, p) }},
		{name: "scaleIO", set: s.ScaleIO != nil, validate: func(p *field.Path) field.ErrorList {
			return required(p, "gateway", s.ScaleIO.Gateway, "system", s.ScaleIO.System, "volumeName", s.ScaleIO.VolumeName)
		}},
		{name: "local", set: s.Local != nil, validate: func(p *field.Path) field.ErrorList {
			if s.Local.Path == "" {
				return field.ErrorList{field.Required(p.Child("path"), "")}
			}
			return noBacksteps(s.Local.Path, p.Child("path"))
		}},
		{name: "storageos", set: s.StorageOS != nil, validate: func(p *field.Path) field.ErrorList { return validateStorageOS(s.StorageOS, p) }},
		{name: "csi", set: s.CSI != nil, validate: func(p *field.Path) field.ErrorList { return validateCSI(s.CSI, p) }},
	}
}

// required takes (field name, value) pairs and requires each value.
func required(fldPath *field.Path, pairs ...string) field.ErrorList {
	var errs field.ErrorList
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			errs = append(errs, field.Required(fldPath.Child(pairs[i]), ""))
		}
	}
	return errs
}

func requiredList(fldPath *field.Path, list []string) field.ErrorList {
	if len(list) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return nil
}

func noBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

var hostPathTypes = sets.New(corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev)

// validateHostPath: a path without "..", of a known type. Upstream requires no absolute path
// of a volume's hostPath (a pod's neither); the node agent mounts what it is given.
func validateHostPath(h *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	errs := noBacksteps(h.Path, fldPath.Child("path"))
	if h.Type != nil && !hostPathTypes.Has(*h.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), *h.Type, sets.List(hostPathTypes)))
	}
	return errs
}

// diskWithPartition is a cloud disk: a name and a partition in 0..255 (upstream's message
// says 1..255).
func diskWithPartition(fldPath *field.Path, nameField, name string, partition int32) field.ErrorList {
	errs := required(fldPath, nameField, name)
	if partition < 0 || partition > 255 {
		errs = append(errs, field.Invalid(fldPath.Child("partition"), partition, validation.InclusiveRangeError(1, 255)))
	}
	return errs
}

func validateGlusterfs(g *corev1.GlusterfsPersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := required(fldPath, "endpoints", g.EndpointsName, "path", g.Path)
	if ns := g.EndpointsNamespace; ns != nil {
		nsPath := fldPath.Child("endpointsNamespace")
		if *ns == "" {
			return append(errs, field.Invalid(nsPath, *ns, "if the endpointnamespace is set, it must be a valid namespace name"))
		}
		for _, msg := range apivalidation.ValidateNamespaceName(*ns, false) {
			errs = append(errs, field.Invalid(nsPath, *ns, msg))
		}
	}
	return errs
}

func validateFlocker(f *corev1.FlockerVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.DatasetName == "" && f.DatasetUUID == "" {
		errs = append(errs, field.Required(fldPath, "one of datasetName and datasetUUID is required"))
	}
	if f.DatasetName != "" && f.DatasetUUID != "" {
		errs = append(errs, field.Invalid(fldPath, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
	}
	if strings.Contains(f.DatasetName, "/") {
		errs = append(errs, field.Invalid(fldPath.Child("datasetName"), f.DatasetName, "must not contain '/'"))
	}
	return errs
}

func validateQuobyte(q *corev1.QuobyteVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	const registryMsg = "must be a host:port pair or multiple pairs separated by commas"
	switch {
	case q.Registry == "":
		errs = append(errs, field.Required(fldPath.Child("registry"), registryMsg))
	case len(q.Tenant) >= 65:
		errs = append(errs, field.Required(fldPath.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, pair := range strings.Split(q.Registry, ",") {
			if _, _, err := net.SplitHostPort(pair); err != nil {
				errs = append(errs, field.Invalid(fldPath.Child("registry"), q.Registry, registryMsg))
			}
		}
	}
	return append(errs, required(fldPath, "volume", q.Volume)...)
}

var (
	iscsiIQN = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	iscsiEUI = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	iscsiNAA = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)
)

// validISCSIName: an iqn, eui or naa name of the right form.
func validISCSIName(name string) bool {
	switch {
	case strings.HasPrefix(name, "iqn"):
		return iscsiIQN.MatchString(name)
	case strings.HasPrefix(name, "eui"):
		return iscsiEUI.MatchString(name)
	case strings.HasPrefix(name, "naa"):
		return iscsiNAA.MatchString(name)
	}
	return false
}

func validateISCSI(s *corev1.ISCSIPersistentVolumeSource, pvName string, fldPath *field.Path) field.ErrorList {
	errs := required(fldPath, "targetPortal", s.TargetPortal)
	if s.InitiatorName != nil && len(pvName+":"+s.TargetPortal) > 64 {
		errs = append(errs, field.Invalid(fldPath.Child("targetportal"), s.TargetPortal,
			"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
	}
	if s.IQN == "" {
		errs = append(errs, field.Required(fldPath.Child("iqn"), ""))
	} else if !validISCSIName(s.IQN) {
		errs = append(errs, field.Invalid(fldPath.Child("iqn"), s.IQN, "must be valid format"))
	}
	if s.Lun < 0 || s.Lun > 255 {
		errs = append(errs, field.Invalid(fldPath.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
	}
	if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
		errs = append(errs, field.Required(fldPath.Child("secretRef"), ""))
	}
	if s.SecretRef != nil && s.SecretRef.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("secretRef", "name"), ""))
	}
	if s.InitiatorName != nil && !validISCSIName(*s.InitiatorName) {
		errs = append(errs, field.Invalid(fldPath.Child("initiatorname"), *s.InitiatorName, "must be valid format"))
	}
	return errs
}

func validateFC(fc *corev1.FCVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(fc.TargetWWNs) < 1 && len(fc.WWIDs) < 1 {
		errs = append(errs, field.Required(fldPath.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(fc.TargetWWNs) != 0 && len(fc.WWIDs) != 0 {
		errs = append(errs, field.Invalid(fldPath.Child("targetWWNs"), fc.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(fc.TargetWWNs) != 0 {
		if fc.Lun == nil {
			errs = append(errs, field.Required(fldPath.Child("lun"), "lun is required if targetWWNs is specified"))
		} else if *fc.Lun < 0 || *fc.Lun > 255 {
			errs = append(errs, field.Invalid(fldPath.Child("lun"), fc.Lun, validation.InclusiveRangeError(0, 255)))
		}
	}
	return errs
}

// validateFlex: a driver, and options outside the kubernetes.io and k8s.io namespaces.
func validateFlex(f *corev1.FlexPersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := required(fldPath, "driver", f.Driver)
	for k := range f.Options {
		ns, _, found := strings.Cut(k, "/")
		if !found {
			ns = k
		}
		normalized := "." + strings.ToLower(ns)
		if strings.HasSuffix(normalized, ".kubernetes.io") || strings.HasSuffix(normalized, ".k8s.io") {
			errs = append(errs, field.Invalid(fldPath.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
		}
	}
	return errs
}

var (
	azureCachingModes = sets.New(corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite)
	azureDiskKinds    = sets.New(corev1.AzureSharedBlobDisk, corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk)
)

func validateAzureDisk(d *corev1.AzureDiskVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := required(fldPath, "diskName", d.DiskName, "diskURI", d.DataDiskURI)
	if d.CachingMode != nil && !azureCachingModes.Has(*d.CachingMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("cachingMode"), *d.CachingMode, sets.List(azureCachingModes)))
	}
	if d.Kind != nil && !azureDiskKinds.Has(*d.Kind) {
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), *d.Kind, sets.List(azureDiskKinds)))
	}
	if d.Kind != nil && *d.Kind == corev1.AzureManagedDisk && !strings.HasPrefix(d.DataDiskURI, "/subscriptions/") {
		errs = append(errs, field.NotSupported(fldPath.Child("diskURI"), d.DataDiskURI,
			[]string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
	}
	if d.Kind != nil && *d.Kind != corev1.AzureManagedDisk && !strings.HasPrefix(d.DataDiskURI, "https://") {
		errs = append(errs, field.NotSupported(fldPath.Child("diskURI"), d.DataDiskURI,
			[]string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
	}
	return errs
}

func validateStorageOS(s *corev1.StorageOSPersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.VolumeName == "" {
		errs = append(errs, field.Required(fldPath.Child("volumeName"), ""))
	} else {
		errs = append(errs, dns1123Label(s.VolumeName, fldPath.Child("volumeName"))...)
	}
	if s.VolumeNamespace != "" {
		errs = append(errs, dns1123Label(s.VolumeNamespace, fldPath.Child("volumeNamespace"))...)
	}
	if r := s.SecretRef; r != nil {
		errs = append(errs, required(fldPath.Child("secretRef"), "name", r.Name, "namespace", r.Namespace)...)
	}
	return errs
}

func dns1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateCSI(csi *corev1.CSIPersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := ValidateCSIDriverName(csi.Driver, fldPath.Child("driver"))
	errs = append(errs, required(fldPath, "volumeHandle", csi.VolumeHandle)...)
	for _, r := range []struct {
		name string
		ref  *corev1.SecretReference
	}{
		{"controllerPublishSecretRef", csi.ControllerPublishSecretRef},
		{"controllerExpandSecretRef", csi.ControllerExpandSecretRef},
		{"nodePublishSecretRef", csi.NodePublishSecretRef},
		{"nodeExpandSecretRef", csi.NodeExpandSecretRef},
	} {
		if r.ref != nil {
			errs = append(errs, validateSecretReference(r.ref, fldPath.Child(r.name))...)
		}
	}
	return errs
}

// ValidateCSIDriverName: a DNS subdomain, case aside, of at most 63 characters.
func ValidateCSIDriverName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	if len(name) > 63 {
		errs = append(errs, field.TooLong(fldPath, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// validateSecretReference: a CSI secret names its namespace and itself.
func validateSecretReference(r *corev1.SecretReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), r.Name, msg))
		}
	}
	if r.Namespace == "" {
		errs = append(errs, field.Required(fldPath.Child("namespace"), ""))
	} else {
		errs = append(errs, dns1123Label(r.Namespace, fldPath.Child("namespace"))...)
	}
	return errs
}
