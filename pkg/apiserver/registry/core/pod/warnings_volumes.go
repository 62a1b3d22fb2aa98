package pod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the volume warnings of a pod's or a template's write: volume types that
// Kubernetes deprecated or removed, and volumes whose files would overwrite each other.

// volumeWarnings warn of each volume of a deprecated or removed type, and of an ephemeral
// volume's claim template asking for a fraction of a byte, in upstream's order.
func volumeWarnings(volumes []corev1.Volume, volumesPath *field.Path) []string {
	var warnings []string
	for i, v := range volumes {
		p := volumesPath.Index(i)
		deprecated := func(set bool, name, message string) {
			if set {
				warnings = append(warnings, fmt.Sprintf("%s: %s", p.Child(name), message))
			}
		}
		deprecated(v.PhotonPersistentDisk != nil, "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+")
		// The GitRepoVolumeDriver gate is off, and locked so, since v1.36.
		deprecated(v.GitRepo != nil, "gitRepo", "deprecated in v1.11, and disabled by default in v1.33+")
		deprecated(v.ScaleIO != nil, "scaleIO", "deprecated in v1.16, non-functional in v1.22+")
		deprecated(v.Flocker != nil, "flocker", "deprecated in v1.22, non-functional in v1.25+")
		deprecated(v.StorageOS != nil, "storageOS", "deprecated in v1.22, non-functional in v1.25+")
		deprecated(v.Quobyte != nil, "quobyte", "deprecated in v1.22, non-functional in v1.25+")
		deprecated(v.Glusterfs != nil, "glusterfs", "deprecated in v1.25, non-functional in v1.26+")
		if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
			warnings = append(warnings, ClaimSpecWarnings(p.Child("ephemeral", "volumeClaimTemplate", "spec"), &v.Ephemeral.VolumeClaimTemplate.Spec)...)
		}
		deprecated(v.CephFS != nil, "cephfs", "deprecated in v1.28, non-functional in v1.31+")
		deprecated(v.RBD != nil, "rbd", "deprecated in v1.28, non-functional in v1.31+")
	}
	return warnings
}

// virtualPath is a file a volume projects, with where it comes from for the message ("" for a
// volume of one source).
type virtualPath struct {
	path, source string
}

func (v virtualPath) String() string {
	if v.source == "" {
		return fmt.Sprintf("%q", v.path)
	}
	return fmt.Sprintf("%q (%s)", v.path, v.source)
}

// overlappingPathWarnings warn of the files of a configMap, secret, downwardAPI or projected
// volume that land on the same path, or one inside the other: the kubelet then overwrites
// one with the other or fails with "is a directory" / "file exists". A projected source that
// sets nothing is warned of too.
func overlappingPathWarnings(volumes []corev1.Volume) []string {
	var warnings []string
	warn := func(v *corev1.Volume, desc string, overlaps []string) {
		for _, o := range overlaps {
			warnings = append(warnings, fmt.Sprintf("volume %q (%s): overlapping paths: %s", v.Name, desc, o))
		}
	}
	for i := range volumes {
		v := &volumes[i]
		if v.ConfigMap != nil && v.ConfigMap.Items != nil {
			warn(v, fmt.Sprintf("ConfigMap %q", v.ConfigMap.Name), overlaps(keyPaths(v.ConfigMap.Items, "")))
		}
		if v.Secret != nil && v.Secret.Items != nil {
			warn(v, fmt.Sprintf("Secret %q", v.Secret.SecretName), overlaps(keyPaths(v.Secret.Items, "")))
		}
		if v.DownwardAPI != nil && v.DownwardAPI.Items != nil {
			warn(v, "DownwardAPI", overlaps(downwardAPIPaths(v.DownwardAPI.Items, "")))
		}
		if v.Projected == nil {
			continue
		}
		// The sources of a projected volume share one directory: each source's files are
		// checked against all the earlier sources' files and its own.
		var all []virtualPath
		for _, src := range v.Projected.Sources {
			if src == (corev1.VolumeProjection{}) {
				warnings = append(warnings, fmt.Sprintf("volume %q (Projected) has no sources provided", v.Name))
				continue
			}
			var found []string
			found, all = appendChecked(all, projectionPaths(&src))
			warn(v, "Projected", found)
		}
	}
	return warnings
}

// projectionPaths are the files one projected source writes, in upstream's order of sources
// (the first that is set and has files).
func projectionPaths(src *corev1.VolumeProjection) []virtualPath {
	switch {
	case src.ConfigMap != nil && src.ConfigMap.Items != nil:
		return keyPaths(src.ConfigMap.Items, fmt.Sprintf("ConfigMap %q", src.ConfigMap.Name))
	case src.Secret != nil && src.Secret.Items != nil:
		return keyPaths(src.Secret.Items, fmt.Sprintf("Secret %q", src.Secret.Name))
	case src.DownwardAPI != nil && src.DownwardAPI.Items != nil:
		return downwardAPIPaths(src.DownwardAPI.Items, "DownwardAPI")
	case src.ServiceAccountToken != nil:
		return []virtualPath{{src.ServiceAccountToken.Path, "ServiceAccountToken"}}
	case src.ClusterTrustBundle != nil:
		b := src.ClusterTrustBundle
		name := ""
		switch {
		case b.Name != nil:
			name = *b.Name
		case b.SignerName != nil:
			name = *b.SignerName
		}
		return []virtualPath{{b.Path, fmt.Sprintf("ClusterTrustBundle %q", name)}}
	case src.PodCertificate != nil:
		c := src.PodCertificate
		var paths []virtualPath
		for _, f := range []virtualPath{
			{c.CertificateChainPath, "PodCertificate chain"},
			{c.KeyPath, "PodCertificate key"},
			{c.CredentialBundlePath, "PodCertificate credential bundle"},
		} {
			if f.path != "" {
				paths = append(paths, f)
			}
		}
		return paths
	}
	return nil
}

func keyPaths(items []corev1.KeyToPath, source string) []virtualPath {
	paths := make([]virtualPath, 0, len(items))
	for _, item := range items {
		paths = append(paths, virtualPath{item.Path, source})
	}
	return paths
}

func downwardAPIPaths(items []corev1.DownwardAPIVolumeFile, source string) []virtualPath {
	paths := make([]virtualPath, 0, len(items))
	for _, item := range items {
		paths = append(paths, virtualPath{item.Path, source})
	}
	return paths
}

// overlaps are the overlaps among the files of one source, each file against those before it.
func overlaps(paths []virtualPath) []string {
	found, _ := appendChecked(nil, paths)
	return found
}

// appendChecked appends paths to seen one by one, each checked against those before it, and
// returns the overlaps found ("<new> with <earlier>") and the grown list.
func appendChecked(seen, paths []virtualPath) ([]string, []virtualPath) {
	var found []string
	for _, p := range paths {
		p.path = strings.TrimRight(p.path, "/")
		for _, c := range collisions(seen, p) {
			found = append(found, fmt.Sprintf("%s with %s", p, c))
		}
		seen = append(seen, p)
	}
	return found, seen
}

// collisions are the paths of haystack that needle clashes with: the same path, or one
// inside the other. The API server checks with "/" whatever the nodes run.
func collisions(haystack []virtualPath, needle virtualPath) []virtualPath {
	if needle.path == "" {
		return nil
	}
	var found []virtualPath
	for _, item := range haystack {
		switch {
		case item.path == "":
		case strings.HasPrefix(item.path+"/", needle.path+"/"),
			strings.HasPrefix(needle.path+"/", item.path+"/"):
			found = append(found, item)
		}
	}
	return found
}
