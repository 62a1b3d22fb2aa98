package persistentvolume

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// volume is a valid, defaulted hostPath volume as the registry stores it.
func volume(mutate ...func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/data/pv-1", Type: ptr.To(corev1.HostPathUnset)},
			},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumePending},
	}
	for _, m := range mutate {
		m(pv)
	}
	return pv
}

// withSource replaces the volume's source.
func withSource(s corev1.PersistentVolumeSource) func(*corev1.PersistentVolume) {
	return func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeSource = s }
}

func affinity(key string, values ...string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}},
	}}}}
}

// assertErrors compares the errors' full texts; a wanted text ending in "..." matches by
// prefix (for upstream's messages that carry a diff or a printed struct).
func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, e.Error())
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	match := len(got) == len(want)
	for i := 0; match && i < len(got); i++ {
		if prefix, ok := strings.CutSuffix(want[i], "..."); ok {
			match = strings.HasPrefix(got[i], prefix)
		} else {
			match = got[i] == want[i]
		}
	}
	if !match {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

const dns1123Subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

func TestValidatePersistentVolume(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []string
	}{
		{name: "valid", mutate: func(*corev1.PersistentVolume) {}},
		{name: "namespaced name is ignored, bad name is not", mutate: func(pv *corev1.PersistentVolume) { pv.Name = "PV" },
			want: []string{`metadata.name: Invalid value: "PV": ` + dns1123Subdomain}},
		{name: "no capacity", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil },
			want: []string{"spec.capacity: Required value", `spec.capacity: Unsupported value: null: supported values: "storage"`}},
		{name: "capacity of more than storage", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceCPU] = resource.MustParse("1") },
			want: []string{`spec.capacity: Unsupported value: ...`}},
		{name: "zero capacity", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("0") },
			want: []string{`spec.capacity[storage]: Invalid value: "0": must be greater than zero`}},
		{name: "negative capacity", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("-2") },
			want: []string{`spec.capacity[storage]: Invalid value: -2: must be a valid resource quantity`, `spec.capacity[storage]: Invalid value: "-2": must be greater than zero`}},
		{name: "no access modes", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil },
			want: []string{"spec.accessModes: Required value"}},
		{name: "unknown access mode", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadMostly", corev1.ReadWriteOncePod, corev1.ReadWriteMany}
		}, want: []string{
			`spec.accessModes: Unsupported value: "ReadMostly": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`,
			"spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
		}},
		{name: "unknown reclaim policy", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" },
			want: []string{`spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"`}},
		{name: "recycling /", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath.Path = "/./"
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}, want: []string{"spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"}},
		{name: "no source", mutate: withSource(corev1.PersistentVolumeSource{}),
			want: []string{"spec: Required value: must specify a volume type"}},
		{name: "two sources", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "s", Path: "/p"} },
			want: []string{"spec.nfs: Forbidden: may not specify more than 1 volume type"}},
		{name: "hostPath without a path", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "" },
			want: []string{"spec.hostPath.path: Required value"}},
		{name: "hostPath with backsteps and an unknown type", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/data/../etc", Type: ptr.To[corev1.HostPathType]("Pipe")}
		}, want: []string{
			`spec.hostPath.path: Invalid value: "/data/../etc": must not contain '..'`,
			`spec.hostPath.type: Unsupported value: "Pipe": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`,
		}},
		{name: "nfs", mutate: withSource(corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Path: "exports"}}),
			want: []string{"spec.nfs.server: Required value", `spec.nfs.path: Invalid value: "exports": must be an absolute path`}},
		{name: "csi", mutate: withSource(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: "Driver_X", NodePublishSecretRef: &corev1.SecretReference{Name: "s"},
		}}), want: []string{
			`spec.csi.driver: Invalid value: "Driver_X": ` + dns1123Subdomain,
			"spec.csi.volumeHandle: Required value",
			"spec.csi.nodePublishSecretRef.namespace: Required value",
		}},
		{name: "csi without a driver", mutate: withSource(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{VolumeHandle: "h"}}),
			want: []string{"spec.csi.driver: Required value"}},
		{name: "local without node affinity", mutate: withSource(corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}),
			want: []string{"spec.nodeAffinity: Required value: Local volume requires node affinity"}},
		{name: "local with node affinity", mutate: func(pv *corev1.PersistentVolume) {
			withSource(corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}})(pv)
			pv.Spec.NodeAffinity = affinity("kubernetes.io/hostname", "node-a")
		}},
		{name: "bad node affinity", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity = affinity("kubernetes.io/hostname", "not a value")
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchFields = []corev1.NodeSelectorRequirement{{Key: "spec.nodeName", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}
		}, want: []string{
			`spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "not a value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
			`spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "spec.nodeName": not a valid field selector key`,
		}},
		{name: "node affinity without required", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{} },
			want: []string{"spec.nodeAffinity.required: Required value: must specify required node constraints"}},
		{name: "node affinity without terms", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
		}, want: []string{"spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"}},
		{name: "bad class names and mode", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.StorageClassName = "Fast"
			pv.Spec.VolumeMode = ptr.To[corev1.PersistentVolumeMode]("Tape")
			pv.Spec.VolumeAttributesClassName = ptr.To("")
		}, want: []string{
			`spec.storageClassName: Invalid value: "Fast": ` + dns1123Subdomain,
			`spec.volumeMode: Unsupported value: "Tape": supported values: "Block", "Filesystem"`,
			"spec.volumeAttributesClassName: Required value: an empty string is disallowed",
			"spec.csi: Required value: has to be specified when using volumeAttributesClassName",
		}},
		{name: "mount options on a hostPath", mutate: func(pv *corev1.PersistentVolume) {
			pv.Annotations = map[string]string{corev1.MountOptionAnnotation: "ro"}
		}, want: []string{"metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden: may not specify mount options for this volume type"}},
		{name: "mount options on NFS", mutate: func(pv *corev1.PersistentVolume) {
			withSource(corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/p"}})(pv)
			pv.Annotations = map[string]string{corev1.MountOptionAnnotation: "ro"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidatePersistentVolume(volume(tc.mutate), Options{}), tc.want)
		})
	}
}

// TestValidateSources: each source's required fields, under upstream's paths.
func TestValidateSources(t *testing.T) {
	tests := []struct {
		name string
		src  corev1.PersistentVolumeSource
		want []string
	}{
		{"gce", corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{Partition: 300}},
			[]string{"spec.persistentDisk.pdName: Required value", "spec.persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive"}},
		{"aws", corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{}},
			[]string{"spec.awsElasticBlockStore.volumeID: Required value"}},
		{"glusterfs", corev1.PersistentVolumeSource{Glusterfs: &corev1.GlusterfsPersistentVolumeSource{EndpointsNamespace: ptr.To("")}},
			[]string{"spec.glusterfs.endpoints: Required value", "spec.glusterfs.path: Required value",
				`spec.glusterfs.endpointsNamespace: Invalid value: "": if the endpointnamespace is set, it must be a valid namespace name`}},
		{"flocker", corev1.PersistentVolumeSource{Flocker: &corev1.FlockerVolumeSource{}},
			[]string{"spec.flocker: Required value: one of datasetName and datasetUUID is required"}},
		{"rbd", corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{}},
			[]string{"spec.rbd.monitors: Required value", "spec.rbd.image: Required value"}},
		{"quobyte", corev1.PersistentVolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "nohost", Volume: "v"}},
			[]string{`spec.quobyte.registry: Invalid value: "nohost": must be a host:port pair or multiple pairs separated by commas`}},
		{"cephfs", corev1.PersistentVolumeSource{CephFS: &corev1.CephFSPersistentVolumeSource{}},
			[]string{"spec.cephfs.monitors: Required value"}},
		{"iscsi", corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{IQN: "iqn.bad", Lun: 300, SessionCHAPAuth: true}},
			[]string{"spec.iscsi.targetPortal: Required value", `spec.iscsi.iqn: Invalid value: "iqn.bad": must be valid format`,
				"spec.iscsi.lun: Invalid value: 300: must be between 0 and 255, inclusive", "spec.iscsi.secretRef: Required value"}},
		{"iscsi valid", corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2015-02.example.com:test"}}, nil},
		{"cinder", corev1.PersistentVolumeSource{Cinder: &corev1.CinderPersistentVolumeSource{SecretRef: &corev1.SecretReference{}}},
			[]string{"spec.cinder.volumeID: Required value", "spec.cinder.secretRef.name: Required value", "spec.cinder.secretRef.namespace: Required value"}},
		{"fc", corev1.PersistentVolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"w"}}},
			[]string{"spec.fc.lun: Required value: lun is required if targetWWNs is specified"}},
		{"flex", corev1.PersistentVolumeSource{FlexVolume: &corev1.FlexPersistentVolumeSource{Options: map[string]string{"kubernetes.io/x": "y"}}},
			[]string{"spec.flexVolume.driver: Required value", `spec.flexVolume.options[kubernetes.io/x]: Invalid value: "kubernetes.io/x": kubernetes.io and k8s.io namespaces are reserved`}},
		{"azure file", corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{SecretNamespace: ptr.To("")}},
			[]string{"spec.azureFile.secretName: Required value", "spec.azureFile.shareName: Required value", "spec.azureFile.secretNamespace: Required value"}},
		{"vsphere", corev1.PersistentVolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{}},
			[]string{"spec.vsphereVolume.volumePath: Required value"}},
		{"azure disk", corev1.PersistentVolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "http://x", Kind: ptr.To(corev1.AzureSharedBlobDisk)}},
			[]string{`spec.azureDisk.diskURI: Unsupported value: "http://x": supported values: "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"`}},
		{"scaleio", corev1.PersistentVolumeSource{ScaleIO: &corev1.ScaleIOPersistentVolumeSource{}},
			[]string{"spec.scaleIO.gateway: Required value", "spec.scaleIO.system: Required value", "spec.scaleIO.volumeName: Required value"}},
		{"storageos", corev1.PersistentVolumeSource{StorageOS: &corev1.StorageOSPersistentVolumeSource{VolumeName: "V"}},
			[]string{`spec.storageos.volumeName: Invalid value: "V": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		{"local backsteps", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/../x"}},
			[]string{`spec.local.path: Invalid value: "/mnt/../x": must not contain '..'`, "spec.nodeAffinity: Required value: Local volume requires node affinity"}},
		// flexVolume never counts as one too many, but the sources after it do.
		{"flex and local", corev1.PersistentVolumeSource{FlexVolume: &corev1.FlexPersistentVolumeSource{Driver: "d"}, Local: &corev1.LocalVolumeSource{Path: "/x"}},
			[]string{"spec.local: Forbidden: may not specify more than 1 volume type"}},
		{"nfs and flex", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/p"}, FlexVolume: &corev1.FlexPersistentVolumeSource{}},
			[]string{"spec.flexVolume.driver: Required value"}},
		{"gce and cephfs", corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "d"}, CephFS: &corev1.CephFSPersistentVolumeSource{}},
			[]string{"spec.cephFS: Forbidden: may not specify more than 1 volume type"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidatePersistentVolume(volume(withSource(tc.src)), Options{}), tc.want)
		})
	}
}

func TestValidatePersistentVolumeUpdate(t *testing.T) {
	csi := func(mutate func(*corev1.CSIPersistentVolumeSource)) func(*corev1.PersistentVolume) {
		return func(pv *corev1.PersistentVolume) {
			s := &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "h"}
			if mutate != nil {
				mutate(s)
			}
			pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{CSI: s}
		}
	}
	expandSecret := func(s *corev1.CSIPersistentVolumeSource) {
		s.ControllerExpandSecretRef = &corev1.SecretReference{Name: "e", Namespace: "ns"}
	}
	zone := func(key string) func(*corev1.PersistentVolume) {
		return func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity = affinity(key, "z1") }
	}
	tests := []struct {
		name     string
		old, new *corev1.PersistentVolume
		want     []string
	}{
		{name: "claim ref, class and policy change", old: volume(), new: volume(func(pv *corev1.PersistentVolume) {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data"}
			pv.Spec.StorageClassName = "manual"
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
			pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
		})},
		{name: "the source stays", old: volume(), new: volume(func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "/elsewhere" }),
			want: []string{"spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n..."}},
		{name: "a CSI volume gets an expansion secret once", old: volume(csi(nil)), new: volume(csi(expandSecret))},
		{name: "the volume mode stays", old: volume(), new: volume(func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }),
			want: []string{`volumeMode: Invalid value: "Block": field is immutable`}},
		{name: "node affinity may be set", old: volume(), new: volume(zone(corev1.LabelTopologyZone))},
		{name: "node affinity stays", old: volume(zone(corev1.LabelTopologyZone)), new: volume(zone(corev1.LabelTopologyRegion)),
			want: []string{`nodeAffinity: Invalid value: "...": field is immutable, except for updating from beta label to GA`}},
		{name: "node affinity moves from beta to GA", old: volume(zone(corev1.LabelFailureDomainBetaZone)), new: volume(zone(corev1.LabelTopologyZone))},
		{name: "a stored invalid label value is tolerated", old: volume(func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity = affinity("k", "not valid") }),
			new: volume(func(pv *corev1.PersistentVolume) {
				pv.Spec.NodeAffinity = affinity("k", "not valid")
				pv.Labels = map[string]string{"a": "b"}
			})},
		{name: "an attributes class stays set", old: volume(csi(nil), func(pv *corev1.PersistentVolume) { pv.Spec.VolumeAttributesClassName = ptr.To("gold") }),
			new:  volume(csi(nil)),
			want: []string{"spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidatePersistentVolumeUpdate(tc.new, tc.old, OptionsFor(tc.old))
			// A printed struct has no stable text: match it by its ends.
			for i, e := range errs {
				if e.Field == "nodeAffinity" {
					errs[i].BadValue = "..."
				}
			}
			assertErrors(t, errs, tc.want)
		})
	}
}

func TestValidatePersistentVolumeStatusUpdate(t *testing.T) {
	pv := volume(func(pv *corev1.PersistentVolume) {
		pv.Status = corev1.PersistentVolumeStatus{Phase: "Anything", Message: "m"}
	})
	assertErrors(t, ValidatePersistentVolumeStatusUpdate(pv, volume()), nil)
	pv.ResourceVersion = ""
	assertErrors(t, ValidatePersistentVolumeStatusUpdate(pv, volume()), []string{
		"resourceVersion: Required value", `metadata.resourceVersion: Invalid value: "": must be specified for an update`,
	})
}
