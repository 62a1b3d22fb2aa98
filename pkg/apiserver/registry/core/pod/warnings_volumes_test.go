package pod

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func volumesOf(volumes ...corev1.Volume) *corev1.PodTemplateSpec {
	return specOnly(corev1.PodSpec{Volumes: volumes})
}

func volume(name string, src corev1.VolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: src}
}

func projected(sources ...corev1.VolumeProjection) corev1.Volume {
	return volume("foo", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}})
}

func configMapProjection(name string, paths ...string) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items(paths...)}}
}

func secretProjection(name string, paths ...string) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items(paths...)}}
}

func downwardAPIProjection(paths ...string) corev1.VolumeProjection {
	return corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: downwardItems(paths...)}}
}

func tokenProjection(path string) corev1.VolumeProjection {
	return corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: path}}
}

func items(paths ...string) []corev1.KeyToPath {
	var out []corev1.KeyToPath
	for i, p := range paths {
		out = append(out, corev1.KeyToPath{Key: string(rune('a' + i)), Path: p})
	}
	return out
}

func downwardItems(paths ...string) []corev1.DownwardAPIVolumeFile {
	var out []corev1.DownwardAPIVolumeFile
	for _, p := range paths {
		out = append(out, corev1.DownwardAPIVolumeFile{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}, Path: p})
	}
	return out
}

func claimTemplate(storage string) corev1.VolumeSource {
	return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(storage)},
		}},
	}}}
}

func TestVolumeWarnings(t *testing.T) {
	runWarningCases(t, []warningCase{
		{
			name:     "photon",
			template: volumesOf(volume("p", corev1.VolumeSource{PhotonPersistentDisk: &corev1.PhotonPersistentDiskVolumeSource{}})),
			want:     []string{`spec.volumes[0].photonPersistentDisk: deprecated in v1.11, non-functional in v1.16+`},
		},
		{
			// GitRepoVolumeDriver is locked off since v1.36: upstream's "plugin disabled" text.
			name:     "gitRepo",
			template: volumesOf(volume("s", corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{}})),
			want:     []string{`spec.volumes[0].gitRepo: deprecated in v1.11, and disabled by default in v1.33+`},
		},
		{
			name:     "scaleIO",
			template: volumesOf(volume("s", corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{}})),
			want:     []string{`spec.volumes[0].scaleIO: deprecated in v1.16, non-functional in v1.22+`},
		},
		{
			name:     "flocker",
			template: volumesOf(volume("s", corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{}})),
			want:     []string{`spec.volumes[0].flocker: deprecated in v1.22, non-functional in v1.25+`},
		},
		{
			name:     "storageOS",
			template: volumesOf(volume("s", corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{}})),
			want:     []string{`spec.volumes[0].storageOS: deprecated in v1.22, non-functional in v1.25+`},
		},
		{
			name:     "quobyte",
			template: volumesOf(volume("s", corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{}})),
			want:     []string{`spec.volumes[0].quobyte: deprecated in v1.22, non-functional in v1.25+`},
		},
		{
			name:     "glusterfs",
			template: volumesOf(volume("s", corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{}})),
			want:     []string{`spec.volumes[0].glusterfs: deprecated in v1.25, non-functional in v1.26+`},
		},
		{
			name:     "CephFS",
			template: volumesOf(volume("s", corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{}})),
			want:     []string{`spec.volumes[0].cephfs: deprecated in v1.28, non-functional in v1.31+`},
		},
		{
			name:     "rbd",
			template: volumesOf(volume("s", corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{}})),
			want:     []string{`spec.volumes[0].rbd: deprecated in v1.28, non-functional in v1.31+`},
		},
		{
			name: "several deprecated volumes, in order",
			template: volumesOf(
				volume("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
				volume("b", corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{}}),
				volume("c", corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{}}),
			),
			want: []string{
				`spec.volumes[1].rbd: deprecated in v1.28, non-functional in v1.31+`,
				`spec.volumes[2].flocker: deprecated in v1.22, non-functional in v1.25+`,
			},
		},
		{
			name:     "pod with ephemeral volume source 200Mi",
			template: volumesOf(volume("ephemeral-volume", claimTemplate("200Mi"))),
		},
		{
			name:     "pod with ephemeral volume source 200m",
			template: volumesOf(volume("ephemeral-volume", claimTemplate("200m"))),
			want:     []string{`spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value "200m" is invalid, must be an integer`},
		},
		{
			name: "overlapping paths in a configmap volume",
			template: volumesOf(volume("Test", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "foo"}, Items: items("test", "test"),
			}})),
			want: []string{`volume "Test" (ConfigMap "foo"): overlapping paths: "test" with "test"`},
		},
		{
			name: "overlapping paths in a configmap volume - try to mount dir path into a file",
			template: volumesOf(volume("Test", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "foo"}, Items: items("test", "test/app"),
			}})),
			want: []string{`volume "Test" (ConfigMap "foo"): overlapping paths: "test/app" with "test"`},
		},
		{
			name: "overlapping paths in a configmap volume - try to mount file into a dir path",
			template: volumesOf(volume("Test", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "foo"}, Items: items("test/app", "test"),
			}})),
			want: []string{`volume "Test" (ConfigMap "foo"): overlapping paths: "test" with "test/app"`},
		},
		{
			name: "a common prefix is no overlap",
			template: volumesOf(volume("Test", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "foo"}, Items: items("test", "test2", "dir/a", "dir/b"),
			}})),
		},
		{
			name: "overlapping paths in a secret volume",
			template: volumesOf(volume("Test", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "foo", Items: items("test", "test"),
			}})),
			want: []string{`volume "Test" (Secret "foo"): overlapping paths: "test" with "test"`},
		},
		{
			name:     "overlapping paths in a downward api volume",
			template: volumesOf(volume("Test", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: downwardItems("test", "test")}})),
			want:     []string{`volume "Test" (DownwardAPI): overlapping paths: "test" with "test"`},
		},
		{
			name:     "overlapping paths in projected volume - service account and config",
			template: volumesOf(projected(configMapProjection("Test", "test"), tokenProjection("test"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test" (ConfigMap "Test")`},
		},
		{
			name:     "overlapping paths in projected volume volume: service account dir and config file",
			template: volumesOf(projected(configMapProjection("Test", "test"), tokenProjection("test/file"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "test/file" (ServiceAccountToken) with "test" (ConfigMap "Test")`},
		},
		{
			name:     "overlapping paths in projected volume - service account file and config dir",
			template: volumesOf(projected(configMapProjection("Test", "test/file"), tokenProjection("test"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test/file" (ConfigMap "Test")`},
		},
		{
			name:     "overlapping paths in projected volume - service account and secret",
			template: volumesOf(projected(secretProjection("Test", "test"), tokenProjection("test"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test" (Secret "Test")`},
		},
		{
			name:     "overlapping paths in projected volume - service account and downward api",
			template: volumesOf(projected(downwardAPIProjection("test"), tokenProjection("test"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test" (DownwardAPI)`},
		},
		{
			name: "overlapping paths in projected volume - service account and cluster trust bundle",
			template: volumesOf(projected(
				corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("Test"), Path: "test"}},
				tokenProjection("test"),
			)),
			want: []string{`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test" (ClusterTrustBundle "Test")`},
		},
		{
			name: "overlapping paths in projected volume - service account and cluster trust bundle with signer name",
			template: volumesOf(projected(
				corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("Test"), Path: "test"}},
				tokenProjection("test"),
			)),
			want: []string{`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test" (ClusterTrustBundle "Test")`},
		},
		{
			name:     "overlapping paths in projected volume - secret and config map",
			template: volumesOf(projected(secretProjection("TestSecret", "test"), configMapProjection("TestConfigMap", "test/test1"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "test/test1" (ConfigMap "TestConfigMap") with "test" (Secret "TestSecret")`},
		},
		{
			name:     "overlapping paths in projected volume - config map and downward api",
			template: volumesOf(projected(secretProjection("TestSecret", "test"), downwardAPIProjection("test/test2"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "test/test2" (DownwardAPI) with "test" (Secret "TestSecret")`},
		},
		{
			name: "overlapping paths in projected volume - secret and pod certificate",
			template: volumesOf(projected(secretProjection("TestSecret", "test"), corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{
				CredentialBundlePath: "test", KeyPath: "test", CertificateChainPath: "test",
			}})),
			want: []string{
				`volume "foo" (Projected): overlapping paths: "test" (PodCertificate chain) with "test" (Secret "TestSecret")`,
				`volume "foo" (Projected): overlapping paths: "test" (PodCertificate key) with "test" (Secret "TestSecret")`,
				`volume "foo" (Projected): overlapping paths: "test" (PodCertificate key) with "test" (PodCertificate chain)`,
				`volume "foo" (Projected): overlapping paths: "test" (PodCertificate credential bundle) with "test" (Secret "TestSecret")`,
				`volume "foo" (Projected): overlapping paths: "test" (PodCertificate credential bundle) with "test" (PodCertificate chain)`,
				`volume "foo" (Projected): overlapping paths: "test" (PodCertificate credential bundle) with "test" (PodCertificate key)`,
			},
		},
		{
			name: "overlapping paths in projected volume - downward api and cluster thrust bundle api",
			template: volumesOf(projected(
				downwardAPIProjection("test/test2"),
				corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("Test"), Path: "test"}},
			)),
			want: []string{`volume "foo" (Projected): overlapping paths: "test" (ClusterTrustBundle "Test") with "test/test2" (DownwardAPI)`},
		},
		{
			name: "overlapping paths in projected volume - multiple sources",
			template: volumesOf(projected(
				corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("Test"), Path: "test/test"}},
				downwardAPIProjection("test"),
				secretProjection("Test", "test"),
				tokenProjection("test"),
			)),
			want: []string{
				`volume "foo" (Projected): overlapping paths: "test" (DownwardAPI) with "test/test" (ClusterTrustBundle "Test")`,
				`volume "foo" (Projected): overlapping paths: "test" (Secret "Test") with "test/test" (ClusterTrustBundle "Test")`,
				`volume "foo" (Projected): overlapping paths: "test" (Secret "Test") with "test" (DownwardAPI)`,
				`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test/test" (ClusterTrustBundle "Test")`,
				`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test" (DownwardAPI)`,
				`volume "foo" (Projected): overlapping paths: "test" (ServiceAccountToken) with "test" (Secret "Test")`,
			},
		},
		{
			name:     "overlapping paths in projected volume - ServiceAccount vs. DownwardAPI",
			template: volumesOf(projected(tokenProjection("test/test2"), downwardAPIProjection("test", "test"))),
			want: []string{
				`volume "foo" (Projected): overlapping paths: "test" (DownwardAPI) with "test/test2" (ServiceAccountToken)`,
				`volume "foo" (Projected): overlapping paths: "test" (DownwardAPI) with "test/test2" (ServiceAccountToken)`,
				`volume "foo" (Projected): overlapping paths: "test" (DownwardAPI) with "test" (DownwardAPI)`,
			},
		},
		{
			name:     "trailing slashes are trimmed",
			template: volumesOf(projected(configMapProjection("c", "dir/"), tokenProjection("dir//"))),
			want:     []string{`volume "foo" (Projected): overlapping paths: "dir" (ServiceAccountToken) with "dir" (ConfigMap "c")`},
		},
		{
			name:     "empty sources in projected volume",
			template: volumesOf(projected(corev1.VolumeProjection{})),
			want:     []string{`volume "foo" (Projected) has no sources provided`},
		},
		{
			name: "sources without items project nothing to compare",
			template: volumesOf(projected(
				corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
				corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
			)),
		},
	})
}

func TestClaimSpecWarnings(t *testing.T) {
	spec := &corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1.5")},
		Limits:   corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2500m")},
	}}
	assertWarnings(t, ClaimSpecWarnings(field.NewPath("spec"), spec), []string{
		`spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.resources.limits[storage]: fractional byte value "2500m" is invalid, must be an integer`,
	})
	if w := ClaimSpecWarnings(field.NewPath("spec"), &corev1.PersistentVolumeClaimSpec{}); len(w) != 0 {
		t.Errorf("a claim with no size warned: %q", w)
	}
}

// TestCollisions is upstream's TestCheckForOverLap: which earlier paths a path clashes with.
func TestCollisions(t *testing.T) {
	tests := map[string]struct {
		haystack []virtualPath
		needle   virtualPath
		want     []virtualPath
	}{
		"exact match":                          {[]virtualPath{{"path/path1", "src1"}}, virtualPath{"path/path1", "src2"}, []virtualPath{{"path/path1", "src1"}}},
		"no match":                             {[]virtualPath{{"path/path1", "src1"}}, virtualPath{"path2/path1", "src2"}, nil},
		"empty haystack":                       {[]virtualPath{}, virtualPath{"path2/path1", "src2"}, nil},
		"empty string in haystack":             {[]virtualPath{{"", "src1"}}, virtualPath{"path2/path1", "src2"}, nil},
		"empty path":                           {[]virtualPath{{"test", "src1"}}, virtualPath{"", ""}, nil},
		"empty strings in haystack and needle": {[]virtualPath{{"", "src1"}}, virtualPath{"", ""}, nil},
		"between file and dir":                 {[]virtualPath{{"path/path1", "src1"}}, virtualPath{"path", "src2"}, []virtualPath{{"path/path1", "src1"}}},
		"between dir and file":                 {[]virtualPath{{"path", "src1"}}, virtualPath{"path/path1", "src2"}, []virtualPath{{"path", "src1"}}},
		"multiple paths without overlap": {[]virtualPath{{"path1/path", "src1"}, {"path2/path", "src2"}, {"path3/path", "src3"}},
			virtualPath{"path4/path", "src4"}, nil},
		"multiple paths with 1 overlap": {[]virtualPath{{"path1/path", "src1"}, {"path2/path", "src2"}, {"path3/path", "src3"}},
			virtualPath{"path3/path", "src4"}, []virtualPath{{"path3/path", "src3"}}},
		"multiple paths with multiple overlap": {[]virtualPath{{"path/path1", "src1"}, {"path/path2", "src2"}, {"path/path3", "src3"}},
			virtualPath{"path", "src4"}, []virtualPath{{"path/path1", "src1"}, {"path/path2", "src2"}, {"path/path3", "src3"}}},
		"partial overlap": {[]virtualPath{{"path1/path", "src1"}, {"path2/path", "src2"}, {"path3/path", "src3"}},
			virtualPath{"path101/path3", "src4"}, nil},
		"partial overlap in path": {[]virtualPath{{"dir/path1", "src1"}, {"dir/path2", "src2"}, {"dir/path3", "src3"}},
			virtualPath{"dir/path345", "src4"}, nil},
		"trailing slash in needle":   {[]virtualPath{{"path1/path3", "src1"}}, virtualPath{"path1/path3/", "src2"}, []virtualPath{{"path1/path3", "src1"}}},
		"trailing slash in haystack": {[]virtualPath{{"path1/path3/", "src1"}}, virtualPath{"path1/path3", "src2"}, []virtualPath{{"path1/path3/", "src1"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := collisions(tc.haystack, tc.needle); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("collisions(%v, %v) = %v, want %v", tc.haystack, tc.needle, got, tc.want)
			}
		})
	}
}

// TestProjectionWithNeitherName: a trust bundle source naming neither a bundle nor a signer
// fails validation, but the warnings, run on whatever reaches them, must not crash on it.
func TestProjectionWithNeitherName(t *testing.T) {
	got := Warnings(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{projected(
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "b"}},
		tokenProjection("b"),
	)}}}, nil)
	assertWarnings(t, got, []string{`volume "foo" (Projected): overlapping paths: "b" (ServiceAccountToken) with "b" (ClusterTrustBundle "")`})
}
