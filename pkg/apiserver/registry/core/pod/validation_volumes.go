package pod

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/certificates"
)

const (
	fileModeErrorMsg     = "must be a number between 0 and 0777 (octal), both inclusive"
	emptyDirModeErrorMsg = "must be a number between 0 and 01777 (octal), both inclusive"
)

// validateVolumes checks the pod's volumes and returns the valid ones by
// name, for the containers' mounts to refer to.
func validateVolumes(volumes []corev1.Volume, meta *metav1.ObjectMeta, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	// An ephemeral volume creates the PVC <pod>-<volume>; naming that same
	// PVC in another volume cannot work.
	createdPVCs := sets.New[string]()
	if meta.Name != "" {
		for _, v := range volumes {
			if v.Ephemeral != nil {
				createdPVCs.Insert(meta.Name + "-" + v.Name)
			}
		}
	}
	var errs field.ErrorList
	valid := map[string]corev1.VolumeSource{}
	names := sets.New[string]()
	for i, v := range volumes {
		p := fldPath.Index(i)
		volErrs := validateVolumeSource(&v.VolumeSource, v.Name, meta, p)
		if v.Name == "" {
			volErrs = append(volErrs, field.Required(p.Child("name"), ""))
		} else {
			volErrs = append(volErrs, dns1123Label(v.Name, p.Child("name"))...)
		}
		if names.Has(v.Name) {
			volErrs = append(volErrs, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(volErrs) == 0 {
			names.Insert(v.Name)
			valid[v.Name] = v.VolumeSource
		}
		errs = append(errs, volErrs...)
		if v.PersistentVolumeClaim != nil && createdPVCs.Has(v.PersistentVolumeClaim.ClaimName) {
			errs = append(errs, field.Invalid(p.Child("persistentVolumeClaim", "claimName"), v.PersistentVolumeClaim.ClaimName,
				"must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return valid, errs
}

// volumeType is one kind of volume source: whether it is set and how it is
// validated (under fldPath.Child(name)).
type volumeType struct {
	name     string
	set      bool
	validate func(fldPath *field.Path) field.ErrorList
}

// validateVolumeSource requires exactly one source; only the first one set
// is validated.
func validateVolumeSource(src *corev1.VolumeSource, volName string, meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	types := []volumeType{
		{"emptyDir", src.EmptyDir != nil, func(p *field.Path) field.ErrorList { return validateEmptyDir(src.EmptyDir, p) }},
		{"hostPath", src.HostPath != nil, func(p *field.Path) field.ErrorList { return validateHostPath(src.HostPath, p) }},
		{"secret", src.Secret != nil, func(p *field.Path) field.ErrorList {
			s := src.Secret
			return validateFileSource(requiredString(s.SecretName, p.Child("secretName")), s.DefaultMode, s.DefaultUser, s.Items, p)
		}},
		{"configMap", src.ConfigMap != nil, func(p *field.Path) field.ErrorList {
			c := src.ConfigMap
			return validateFileSource(requiredString(c.Name, p.Child("name")), c.DefaultMode, c.DefaultUser, c.Items, p)
		}},
		{"downwardAPI", src.DownwardAPI != nil, func(p *field.Path) field.ErrorList { return validateDownwardAPIVolume(src.DownwardAPI, p) }},
		{"projected", src.Projected != nil, func(p *field.Path) field.ErrorList { return validateProjected(src.Projected, p) }},
		{"persistentVolumeClaim", src.PersistentVolumeClaim != nil, func(p *field.Path) field.ErrorList {
			return requiredString(src.PersistentVolumeClaim.ClaimName, p.Child("claimName"))
		}},
		{"ephemeral", src.Ephemeral != nil, func(p *field.Path) field.ErrorList {
			return validateEphemeralVolume(src.Ephemeral, volName, meta, fldPath)
		}},
		{"csi", src.CSI != nil, func(p *field.Path) field.ErrorList { return validateCSIVolume(src.CSI, p) }},
		{"image", src.Image != nil, func(p *field.Path) field.ErrorList {
			errs := requiredString(src.Image.Reference, p.Child("reference"))
			return append(errs, validateEnum(src.Image.PullPolicy, p.Child("pullPolicy"), corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
		}},
		{"nfs", src.NFS != nil, func(p *field.Path) field.ErrorList {
			errs := requiredStrings(p, "server", src.NFS.Server, "path", src.NFS.Path)
			if !path.IsAbs(src.NFS.Path) {
				errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
			}
			return errs
		}},
		{"gitRepo", src.GitRepo != nil, func(p *field.Path) field.ErrorList {
			errs := requiredString(src.GitRepo.Repository, p.Child("repository"))
			return append(errs, validateLocalDescendingPath(src.GitRepo.Directory, p.Child("directory"))...)
		}},
	}
	byName := map[string]volumeType{}
	for _, t := range append(types, legacyVolumeTypes(src)...) {
		byName[t.name] = t
	}

	found := 0
	for _, name := range volumeTypeOrder {
		t := byName[name]
		switch {
		case !t.set:
		case found > 0:
			errs = append(errs, field.Forbidden(fldPath.Child(forbiddenPathName(t.name)), "may not specify more than 1 volume type"))
		default:
			found++
			errs = append(errs, t.validate(fldPath.Child(t.name))...)
		}
	}
	if found == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	}
	return errs
}

// volumeTypeOrder is upstream's order of volume sources: when several are
// set, the first in this order is validated and the others are errors.
var volumeTypeOrder = []string{"emptyDir", "hostPath", "gitRepo", "persistentDisk", "awsElasticBlockStore",
	"secret", "nfs", "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte",
	"downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk",
	"portworxVolume", "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image"}

// forbiddenPathName is the path upstream gives a second volume source in its
// "more than 1 volume type" error; three differ from the validation path.
func forbiddenPathName(name string) string {
	switch name {
	case "downwardAPI":
		return "downwarAPI"
	case "cephfs":
		return "cephFS"
	case "persistentDisk":
		return "gcePersistentDisk"
	}
	return name
}

// legacyVolumeTypes are the old in-tree volume plugins; mostly their
// required fields are checked.
func legacyVolumeTypes(src *corev1.VolumeSource) []volumeType {
	var types []volumeType
	add := func(name string, validate func(*field.Path) field.ErrorList) {
		types = append(types, volumeType{name, true, validate})
	}
	required := func(fields ...string) func(*field.Path) field.ErrorList {
		return func(p *field.Path) field.ErrorList { return requiredStrings(p, fields...) }
	}
	if s := src.GCEPersistentDisk; s != nil {
		add("persistentDisk", func(p *field.Path) field.ErrorList { return partitionAndRequired(s.Partition, p, "pdName", s.PDName) })
	}
	if s := src.AWSElasticBlockStore; s != nil {
		add("awsElasticBlockStore", func(p *field.Path) field.ErrorList {
			return partitionAndRequired(s.Partition, p, "volumeID", s.VolumeID)
		})
	}
	if s := src.ISCSI; s != nil {
		add("iscsi", func(p *field.Path) field.ErrorList {
			errs := requiredStrings(p, "targetPortal", s.TargetPortal, "iqn", s.IQN)
			if s.Lun < 0 || s.Lun > 255 {
				errs = append(errs, field.Invalid(p.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
			}
			if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
				errs = append(errs, field.Required(p.Child("secretRef"), ""))
			}
			return errs
		})
	}
	if s := src.Glusterfs; s != nil {
		add("glusterfs", required("endpoints", s.EndpointsName, "path", s.Path))
	}
	if s := src.Flocker; s != nil {
		add("flocker", func(p *field.Path) field.ErrorList {
			switch {
			case s.DatasetName == "" && s.DatasetUUID == "":
				return field.ErrorList{field.Required(p, "one of datasetName and datasetUUID is required")}
			case s.DatasetName != "" && s.DatasetUUID != "":
				return field.ErrorList{field.Invalid(p, "resource", "datasetName and datasetUUID can not be specified simultaneously")}
			}
			return nil
		})
	}
	if s := src.RBD; s != nil {
		add("rbd", func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if len(s.CephMonitors) == 0 {
				errs = append(errs, field.Required(p.Child("monitors"), ""))
			}
			return append(errs, requiredString(s.RBDImage, p.Child("image"))...)
		})
	}
	if s := src.Cinder; s != nil {
		add("cinder", required("volumeID", s.VolumeID))
	}
	if s := src.CephFS; s != nil {
		add("cephfs", func(p *field.Path) field.ErrorList {
			if len(s.Monitors) == 0 {
				return field.ErrorList{field.Required(p.Child("monitors"), "")}
			}
			return nil
		})
	}
	if s := src.Quobyte; s != nil {
		add("quobyte", required("registry", s.Registry, "volume", s.Volume))
	}
	if s := src.FC; s != nil {
		add("fc", func(p *field.Path) field.ErrorList {
			if len(s.TargetWWNs) == 0 && len(s.WWIDs) == 0 {
				return field.ErrorList{field.Required(p.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both")}
			}
			return nil
		})
	}
	if s := src.FlexVolume; s != nil {
		add("flexVolume", required("driver", s.Driver))
	}
	if s := src.AzureFile; s != nil {
		add("azureFile", required("secretName", s.SecretName, "shareName", s.ShareName))
	}
	if s := src.VsphereVolume; s != nil {
		add("vsphereVolume", required("volumePath", s.VolumePath))
	}
	if s := src.PhotonPersistentDisk; s != nil {
		add("photonPersistentDisk", required("pdID", s.PdID))
	}
	if s := src.PortworxVolume; s != nil {
		add("portworxVolume", required("volumeID", s.VolumeID))
	}
	if s := src.AzureDisk; s != nil {
		add("azureDisk", required("diskName", s.DiskName, "diskURI", s.DataDiskURI))
	}
	if s := src.StorageOS; s != nil {
		add("storageos", required("volumeName", s.VolumeName))
	}
	if s := src.ScaleIO; s != nil {
		add("scaleIO", required("gateway", s.Gateway, "system", s.System, "volumeName", s.VolumeName))
	}
	return types
}

// requiredStrings takes (field name, value) pairs and requires each value.
func requiredStrings(fldPath *field.Path, pairs ...string) field.ErrorList {
	var errs field.ErrorList
	for i := 0; i+1 < len(pairs); i += 2 {
		errs = append(errs, requiredString(pairs[i+1], fldPath.Child(pairs[i]))...)
	}
	return errs
}

func requiredString(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return nil
}

// partitionAndRequired is the check of cloud disks: a name and a partition.
func partitionAndRequired(partition int32, fldPath *field.Path, name, value string) field.ErrorList {
	errs := requiredString(value, fldPath.Child(name))
	if partition < 0 || partition > 255 {
		errs = append(errs, field.Invalid(fldPath.Child("partition"), partition, validation.InclusiveRangeError(1, 255)))
	}
	return errs
}

func validateEmptyDir(e *corev1.EmptyDirVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e.SizeLimit != nil && e.SizeLimit.Sign() < 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	if e.Mode != nil && (*e.Mode < 0 || *e.Mode > 01777) {
		errs = append(errs, field.Invalid(fldPath.Child("mode"), *e.Mode, emptyDirModeErrorMsg))
	}
	return errs
}

var hostPathTypes = sets.New(corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev)

func validateHostPath(h *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	errs := validatePathNoBacksteps(h.Path, fldPath.Child("path"))
	if h.Type != nil && !hostPathTypes.Has(*h.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), *h.Type, sets.List(hostPathTypes)))
	}
	return errs
}

// validateFileSource checks what secret and configMap volumes share: the
// default file mode and owner and the key-to-path items.
func validateFileSource(errs field.ErrorList, mode *int32, user *int64, items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	errs = append(errs, validateMode(mode, fldPath.Child("defaultMode"))...)
	errs = append(errs, validateUser(user, fldPath.Child("defaultUser"))...)
	for i := range items {
		errs = append(errs, validateKeyToPath(&items[i], fldPath.Child("items").Index(i))...)
	}
	return errs
}

func validateMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0777) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateUser(user *int64, fldPath *field.Path) field.ErrorList {
	if user == nil {
		return nil
	}
	return invalidAll(fldPath, *user, validation.IsValidUserID(*user))
}

func validateKeyToPath(kp *corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	errs := requiredString(kp.Key, fldPath.Child("key"))
	errs = append(errs, requiredString(kp.Path, fldPath.Child("path"))...)
	errs = append(errs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	errs = append(errs, validateMode(kp.Mode, fldPath.Child("mode"))...)
	return append(errs, validateUser(kp.User, fldPath.Child("user"))...)
}

// Downward API field paths a volume file may hold.
var volumeFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid")

func validateDownwardAPIVolume(d *corev1.DownwardAPIVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateMode(d.DefaultMode, fldPath.Child("defaultMode"))
	errs = append(errs, validateUser(d.DefaultUser, fldPath.Child("defaultUser"))...)
	for i := range d.Items {
		// Upstream reports items' errors without the items[i] segment.
		errs = append(errs, validateDownwardAPIFile(&d.Items[i], fldPath)...)
	}
	return errs
}

func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	errs := requiredString(f.Path, fldPath.Child("path"))
	errs = append(errs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, volumeFieldPaths, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	errs = append(errs, validateMode(f.Mode, fldPath.Child("mode"))...)
	return append(errs, validateUser(f.User, fldPath.Child("user"))...)
}

// Bounds of a projected service account token's lifetime, in seconds.
const (
	minTokenExpiration = 10 * 60
	maxTokenExpiration = 1 << 32
)

// validateProjected checks a projected volume: one source per entry, and no
// two files at the same path.
func validateProjected(proj *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateMode(proj.DefaultMode, fldPath.Child("defaultMode"))
	errs = append(errs, validateUser(proj.DefaultUser, fldPath.Child("defaultUser"))...)
	paths := sets.New[string]()
	// claim records a file path; the conflict is reported on the volume.
	claim := func(p string, value interface{}) {
		if paths.Has(p) {
			errs = append(errs, field.Invalid(fldPath, value, "conflicting duplicate paths"))
		}
		paths.Insert(p)
	}
	for i, src := range proj.Sources {
		srcPath := fldPath.Child("sources").Index(i)
		n := 0
		if s := src.Secret; s != nil {
			n++
			p := srcPath.Child("secret")
			errs = append(errs, requiredString(s.Name, p.Child("name"))...)
			for j := range s.Items {
				errs = append(errs, validateKeyToPath(&s.Items[j], p.Child("items").Index(j))...)
				if s.Items[j].Path != "" {
					claim(s.Items[j].Path, s.Name)
				}
			}
		}
		if c := src.ConfigMap; c != nil {
			n++
			p := srcPath.Child("configMap")
			errs = append(errs, requiredString(c.Name, p.Child("name"))...)
			for j := range c.Items {
				errs = append(errs, validateKeyToPath(&c.Items[j], p.Child("items").Index(j))...)
				if c.Items[j].Path != "" {
					claim(c.Items[j].Path, c.Name)
				}
			}
		}
		if d := src.DownwardAPI; d != nil {
			n++
			for j := range d.Items {
				errs = append(errs, validateDownwardAPIFile(&d.Items[j], srcPath.Child("downwardAPI"))...)
				if d.Items[j].Path != "" {
					claim(d.Items[j].Path, d.Items[j].Path)
				}
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			p := srcPath.Child("serviceAccountToken")
			switch exp := t.ExpirationSeconds; {
			case exp == nil:
				errs = append(errs, field.Required(p.Child("expirationSeconds"), ""))
			case *exp < minTokenExpiration:
				errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *exp, "may not specify a duration less than 10 minutes"))
			case *exp > maxTokenExpiration:
				errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *exp, "may not specify a duration larger than 2^32 seconds"))
			}
			// Upstream reports the token path on the volume, not the source.
			if t.Path == "" {
				errs = append(errs, field.Required(fldPath.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, fldPath.Child("path"))...)
			}
			errs = append(errs, validateUser(t.User, p.Child("user"))...)
		}
		if b := src.ClusterTrustBundle; b != nil {
			n++
			errs = append(errs, validateClusterTrustBundleProjection(b, srcPath.Child("clusterTrustBundle"))...)
			claim(b.Path, b.Path)
		}
		if c := src.PodCertificate; c != nil {
			n++
			errs = append(errs, validatePodCertificateProjection(c, srcPath.Child("podCertificate"), claim)...)
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

func validateClusterTrustBundleProjection(b *corev1.ClusterTrustBundleProjection, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Name != nil && b.SignerName != nil:
		errs = append(errs, field.Invalid(fldPath, b, "only one of name and signerName may be used"))
	case b.Name != nil:
		if *b.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("name"), "must be a valid object name"))
		}
		if b.LabelSelector != nil {
			errs = append(errs, field.Invalid(fldPath.Child("labelSelector"), b.LabelSelector, "labelSelector must be unset if name is specified"))
		}
	case b.SignerName != nil:
		if *b.SignerName == "" {
			errs = append(errs, field.Required(fldPath.Child("signerName"), "must be a valid signer name"))
		}
		errs = append(errs, metavalidation.ValidateLabelSelector(b.LabelSelector, strictSelector, fldPath.Child("labelSelector"))...)
	default:
		errs = append(errs, field.Required(fldPath, "either name or signerName must be specified"))
	}
	errs = append(errs, requiredString(b.Path, fldPath.Child("path"))...)
	errs = append(errs, validateUser(b.User, fldPath.Child("user"))...)
	return append(errs, validateLocalNonReservedPath(b.Path, fldPath.Child("path"))...)
}

var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

func validatePodCertificateProjection(c *corev1.PodCertificateProjection, fldPath *field.Path, claim func(string, interface{})) field.ErrorList {
	var errs field.ErrorList
	// One rule for signer names, the certificates registry's (as upstream's core and
	// certificates validation share theirs).
	errs = append(errs, certificates.ValidateSignerName(fldPath.Child("signerName"), c.SignerName)...)
	errs = append(errs, certificates.ValidateUserAnnotations(c.UserAnnotations, fldPath.Child("userAnnotations"))...)
	errs = append(errs, validateUser(c.User, fldPath.Child("user"))...)
	if !sets.New(podCertificateKeyTypes...).Has(c.KeyType) {
		errs = append(errs, field.NotSupported(fldPath.Child("keyType"), c.KeyType, podCertificateKeyTypes))
	}
	if m := c.MaxExpirationSeconds; m != nil {
		if *m < 3600 {
			errs = append(errs, field.Invalid(fldPath.Child("maxExpirationSeconds"), *m, "if provided, maxExpirationSeconds must be >= 3600"))
		}
		// 91 days, or 24 hours for Kubernetes' own signers (certificates.k8s.io's limits).
		limit := int32(91 * 24 * 60 * 60)
		if certificates.IsKubernetesSignerName(c.SignerName) {
			limit = 24 * 60 * 60
		}
		if *m > limit {
			errs = append(errs, field.Invalid(fldPath.Child("maxExpirationSeconds"), *m, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", limit)))
		}
	}
	paths := 0
	for _, f := range []struct{ name, value string }{
		{"credentialBundlePath", c.CredentialBundlePath}, {"keyPath", c.KeyPath}, {"certificateChainPath", c.CertificateChainPath},
	} {
		if f.value != "" {
			paths++
			errs = append(errs, validateLocalNonReservedPath(f.value, fldPath.Child(f.name))...)
			claim(f.value, f.value)
		}
	}
	if paths == 0 {
		errs = append(errs, field.Required(fldPath, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}

func validateCSIVolume(csi *corev1.CSIVolumeSource, fldPath *field.Path) field.ErrorList {
	driverPath := fldPath.Child("driver")
	var errs field.ErrorList
	switch {
	case csi.Driver == "":
		errs = append(errs, field.Required(driverPath, ""))
	default:
		if len(csi.Driver) > 63 {
			errs = append(errs, field.TooLong(driverPath, "", 63))
		}
		errs = append(errs, invalidAll(driverPath, csi.Driver, validation.IsDNS1123Subdomain(strings.ToLower(csi.Driver)))...)
	}
	if ref := csi.NodePublishSecretRef; ref != nil {
		if ref.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("nodePublishSecretRef", "name"), ""))
		} else {
			// Upstream's path.
			errs = append(errs, invalidAll(fldPath.Child("name"), ref.Name, apivalidation.NameIsDNSSubdomain(ref.Name, false))...)
		}
	}
	return errs
}

var pvcAccessModes = sets.New(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod)

// validateEphemeralVolume checks the claim template of a generic ephemeral
// volume: labels and annotations only in its metadata, and a usable claim.
func validateEphemeralVolume(e *corev1.EphemeralVolumeSource, volName string, meta *metav1.ObjectMeta, volPath *field.Path) field.ErrorList {
	tmplPath := volPath.Child("ephemeral", "volumeClaimTemplate")
	if e.VolumeClaimTemplate == nil {
		return field.ErrorList{field.Required(tmplPath, "")}
	}
	tmpl := e.VolumeClaimTemplate
	errs := apivalidation.ValidateAnnotations(tmpl.Annotations, tmplPath.Child("metadata", "annotations"))
	errs = append(errs, metavalidation.ValidateLabels(tmpl.Labels, tmplPath.Child("metadata", "labels"))...)

	spec, specPath := &tmpl.Spec, tmplPath.Child("spec")
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(specPath.Child("accessModes"), "at least 1 access mode is required"))
	}
	for _, mode := range spec.AccessModes {
		if !pvcAccessModes.Has(mode) {
			errs = append(errs, field.NotSupported(specPath.Child("accessModes"), mode, sets.List(pvcAccessModes)))
		}
	}
	if spec.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabelSelector(spec.Selector, strictSelector, specPath.Child("selector"))...)
	}
	storagePath := specPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if q.Cmp(resource.Quantity{}) <= 0 {
		errs = append(errs, field.Invalid(storagePath, q.String(), "must be greater than zero"))
	}
	if c := spec.StorageClassName; c != nil && *c != "" {
		errs = append(errs, invalidAll(specPath.Child("storageClassName"), *c, apivalidation.NameIsDNSSubdomain(*c, false))...)
	}
	if m := spec.VolumeMode; m != nil && *m != corev1.PersistentVolumeBlock && *m != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(specPath.Child("volumeMode"), *m, []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}))
	}
	// The claim is named <pod>-<volume>, which must be a valid object name.
	if meta.Name != "" && volName != "" {
		pvcName := meta.Name + "-" + volName
		for _, msg := range apivalidation.NameIsDNSSubdomain(pvcName, false) {
			errs = append(errs, field.Invalid(volPath.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", pvcName, msg)))
		}
	}
	return errs
}

// validateLocalDescendingPath: a relative path that stays below its base.
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(p, fldPath)...)
}

func validatePathNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalNonReservedPath also refuses names starting with "..", which
// the kubelet's atomic writer keeps for itself.
func validateLocalNonReservedPath(p string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(p, fldPath)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		errs = append(errs, field.Invalid(fldPath, p, "must not start with '..'"))
	}
	return errs
}

var (
	mountPropagationModes  = sets.New(corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone)
	recursiveReadOnlyModes = sets.New(corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled)
	bindMountOptions       = []string{string(corev1.BindMountOptionNoDev), string(corev1.BindMountOptionNoExec), string(corev1.BindMountOptionNoSUID)}
)

func validateVolumeMounts(c *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	var errs field.ErrorList
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if mountPaths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, devicePath := range devices {
			if devicePath == m.MountPath {
				errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
				break
			}
		}
		// Upstream reports subPath, propagation and recursiveReadOnly errors
		// on the list, without the mount's index; kept for identical paths.
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		if mp := m.MountPropagation; mp != nil {
			propPath := fldPath.Child("mountPropagation")
			if !mountPropagationModes.Has(*mp) {
				errs = append(errs, field.NotSupported(propPath, *mp, sets.List(mountPropagationModes)))
			}
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if *mp == corev1.MountPropagationBidirectional && !privileged {
				errs = append(errs, field.Forbidden(propPath, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		errs = append(errs, validateRecursiveReadOnly(m, fldPath.Child("recursiveReadOnly"))...)
		seenOpts := sets.New[string]()
		for j, opt := range m.BindMountOptions {
			optPath := p.Child("bindMountOptions").Index(j)
			if !sets.New(bindMountOptions...).Has(opt) {
				errs = append(errs, field.NotSupported(optPath, opt, bindMountOptions))
			}
			if seenOpts.Has(opt) {
				errs = append(errs, field.Duplicate(optPath, opt))
			}
			seenOpts.Insert(opt)
		}
		if vs, ok := volumes[m.Name]; ok && len(m.BindMountOptions) > 0 && vs.Image != nil {
			errs = append(errs, field.Invalid(p.Child("bindMountOptions"), m.BindMountOptions, "bindMountOptions may not be used with image volumes"))
		}
	}
	return errs
}

func validateRecursiveReadOnly(m corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath, *m.RecursiveReadOnly, sets.List(recursiveReadOnlyModes)))
	}
	return errs
}

// validateVolumeDevices: raw block devices come from claims (PVC or
// ephemeral) and may not clash with the container's mounts.
func validateVolumeDevices(c *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var errs field.ErrorList
	names, paths := sets.New[string](), sets.New[string]()
	for i, d := range c.VolumeDevices {
		p := fldPath.Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		if src, ok := volumes[d.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		} else if src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		}
		if paths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, p)) > 0 {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths.Insert(d.DevicePath)
		}
		if _, ok := mounts[d.Name]; ok {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		for _, mountPath := range mounts {
			if mountPath == d.DevicePath {
				errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
				break
			}
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return errs
}
