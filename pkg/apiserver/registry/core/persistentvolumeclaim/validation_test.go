package persistentvolumeclaim

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

// claim is a valid, defaulted claim as the registry stores it.
func claim(mutate ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func storage(q string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
	}
}

func bound(capacity string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.VolumeName = "pv-1"
		c.Status.Phase = corev1.ClaimBound
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	}
}

// assertErrors compares the errors' full texts, as a client sees them in a 422; a wanted
// text ending in "..." matches by prefix (for upstream's messages that carry a diff).
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

func TestValidatePersistentVolumeClaim(t *testing.T) {
	group := func(g string) *string { return &g }
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []string
	}{
		{name: "valid", mutate: func(*corev1.PersistentVolumeClaim) {}},
		{name: "every access mode alone is fine", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany}
		}},
		{name: "uppercase name", mutate: func(c *corev1.PersistentVolumeClaim) { c.Name = "Data" },
			want: []string{`metadata.name: Invalid value: "Data": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{name: "no access modes", mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil },
			want: []string{"spec.accessModes: Required value: at least 1 access mode is required"}},
		{name: "unknown access mode and RWOP with others", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce, "WriteOnly"}
		}, want: []string{
			`spec.accessModes: Unsupported value: "WriteOnly": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`,
			"spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
		}},
		{name: "no storage request", mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil },
			want: []string{"spec.resources[storage]: Required value"}},
		{name: "zero storage", mutate: storage("0"),
			want: []string{`spec.resources[storage]: Invalid value: "0": must be greater than zero`}},
		{name: "negative storage", mutate: storage("-1Gi"),
			want: []string{`spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero`}},
		{name: "bad storage class", mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("Fast_SSD") },
			want: []string{`spec.storageClassName: Invalid value: "Fast_SSD": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{name: "empty storage class is no class", mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("") }},
		{name: "bad volume mode", mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To[corev1.PersistentVolumeMode]("Tape") },
			want: []string{`spec.volumeMode: Unsupported value: "Tape": supported values: "Block", "Filesystem"`}},
		{name: "bad selector", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
		}, want: []string{`spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`}},
		{name: "bad volume attributes class", mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("gold!") },
			want: []string{`spec.volumeAttributesClassName: Invalid value: "gold!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{name: "claim as data source", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
		}},
		{name: "core data source that is not a claim, without a name", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "ConfigMap"}
		}, want: []string{
			"spec.dataSource.name: Required value",
			`spec.dataSource: Invalid value: "ConfigMap": must be 'PersistentVolumeClaim' when referencing the default apiGroup`,
		}},
		{name: "data source ref of a bad group", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: group("Snap_Shots"), Kind: "VolumeSnapshot", Name: "s"}
		}, want: []string{`spec.dataSourceRef.apiGroup: Invalid value: "Snap_Shots": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		// Upstream passes the path itself as the value, which prints as {}.
		{name: "data sources that disagree", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "a"}
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "b"}
		}, want: []string{"spec: Invalid value: {}: must match dataSourceRef"}},
		{name: "cross-namespace ref with a data source", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "a"}
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "a", Namespace: ptr.To("Other")}
		}, want: []string{
			"spec: Invalid value: {}: may not be specified when dataSourceRef.namespace is specified",
			`spec.dataSourceRef.namespace: Invalid value: "Other": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{name: "finalizer without a domain", mutate: func(c *corev1.PersistentVolumeClaim) { c.Finalizers = []string{"mine"} },
			want: []string{`metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`}},
		{name: "protection finalizer", mutate: func(c *corev1.PersistentVolumeClaim) { c.Finalizers = []string{"kubernetes.io/pvc-protection"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidatePersistentVolumeClaim(claim(tc.mutate), Options{}), tc.want)
		})
	}
}

func TestValidateClaimSpecOptions(t *testing.T) {
	spec := claim().Spec
	spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"not a value"}}}}
	spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To("Bad_Group"), Kind: "Thing", Name: "t"}
	if errs := ValidateClaimSpec(&spec, field.NewPath("spec"), Options{}); len(errs) != 2 {
		t.Errorf("strict: %v, want the label value and the group refused", errs)
	}
	old := claim(func(c *corev1.PersistentVolumeClaim) { c.Spec = spec })
	opts := OptionsFor(old)
	if !opts.AllowInvalidLabelValueInSelector || !opts.AllowInvalidAPIGroupInDataSourceOrRef {
		t.Fatalf("options for a claim stored with both: %+v", opts)
	}
	if errs := ValidateClaimSpec(&spec, field.NewPath("spec"), opts); len(errs) != 0 {
		t.Errorf("relaxed: %v", errs)
	}
	if opts := OptionsFor(claim()); opts != (Options{}) {
		t.Errorf("options for a valid claim: %+v", opts)
	}
}

func TestValidatePersistentVolumeClaimUpdate(t *testing.T) {
	const immutable = "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n..."
	annotate := func(class string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: class}
		}
	}
	class := func(name string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = &name }
	}
	tests := []struct {
		name     string
		old, new *corev1.PersistentVolumeClaim
		want     []string
	}{
		{name: "labels change", old: claim(), new: claim(func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"a": "b"} })},
		{name: "the binder sets the volume name", old: claim(), new: claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" })},
		{name: "a set volume name stays", old: claim(bound("1Gi")), new: claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-2" }),
			want: []string{immutable}},
		{name: "access modes stay", old: claim(), new: claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), want: []string{immutable}},
		{name: "a pending claim's request stays", old: claim(), new: claim(storage("2Gi")), want: []string{immutable}},
		{name: "a bound claim grows", old: claim(bound("1Gi")), new: claim(bound("1Gi"), storage("2Gi"))},
		{name: "back down after a failed expansion, above the capacity", old: claim(bound("1Gi"), storage("3Gi")), new: claim(bound("1Gi"), storage("2Gi"))},
		{name: "not down to the capacity", old: claim(bound("1Gi"), storage("3Gi")), new: claim(bound("1Gi"), storage("1Gi")),
			want: []string{"spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"}},
		{name: "a bound claim changes its attributes class", old: claim(bound("1Gi")),
			new: claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("gold") })},
		{name: "a pending claim keeps its attributes class", old: claim(),
			new: claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("gold") }), want: []string{immutable}},
		{name: "an applied attributes class is not removed", old: claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeAttributesClassName = ptr.To("gold")
			c.Status.CurrentVolumeAttributesClassName = ptr.To("gold")
		}), new: claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) {
			c.Status.CurrentVolumeAttributesClassName = ptr.To("gold")
		}), want: []string{"spec.volumeAttributesClassName: Forbidden: update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"}},
		{name: "an applied attributes class is not emptied", old: claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeAttributesClassName = ptr.To("gold")
			c.Status.CurrentVolumeAttributesClassName = ptr.To("gold")
		}), new: claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeAttributesClassName = ptr.To("")
			c.Status.CurrentVolumeAttributesClassName = ptr.To("gold")
		}), want: []string{"spec.volumeAttributesClassName: Forbidden: update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"}},
		{name: "a class for a claim that had none", old: claim(), new: claim(class("fast"))},
		{name: "the class moves from the beta annotation", old: claim(annotate("fast")), new: claim(annotate("fast"), class("fast"))},
		{name: "the class may not differ from the beta annotation", old: claim(annotate("fast")), new: claim(annotate("fast"), class("slow")),
			want: []string{immutable}},
		{name: "the class stays", old: claim(class("fast")), new: claim(class("slow")), want: []string{immutable}},
		{name: "the beta annotation stays", old: claim(annotate("fast")), new: claim(annotate("slow")),
			// Upstream's path, a child rather than a key.
			want: []string{`metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: "slow": field is immutable`}},
		{name: "the volume mode stays", old: claim(), new: claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }),
			want: []string{immutable, `volumeMode: Invalid value: "Block": field is immutable`}},
		{name: "the new claim is validated too", old: claim(), new: claim(func(c *corev1.PersistentVolumeClaim) { c.Finalizers = []string{"mine"} }),
			want: []string{`metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidatePersistentVolumeClaimUpdate(tc.new, tc.old, OptionsFor(tc.old)), tc.want)
		})
	}
}

func TestImmutableSpecNamesTheDiff(t *testing.T) {
	errs := ValidatePersistentVolumeClaimUpdate(claim(storage("2Gi")), claim(), Options{})
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "2Gi") {
		t.Errorf("errors %v, want one whose diff shows the new request", errs)
	}
}

func TestValidatePersistentVolumeClaimStatusUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []string
	}{
		{name: "bound", mutate: bound("1Gi")},
		{name: "resizing", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi"), "example.com/iops": resource.MustParse("10")}
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
		}},
		{name: "no resource version", mutate: func(c *corev1.PersistentVolumeClaim) { c.ResourceVersion = "" },
			want: []string{"resourceVersion: Required value", `metadata.resourceVersion: Invalid value: "": must be specified for an update`}},
		{name: "no access modes", mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil },
			want: []string{"Spec.accessModes: Required value"}},
		{name: "negative capacity", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("-1")}
		}, want: []string{"status.capacity[storage]: Invalid value: -1: must be a valid resource quantity"}},
		{name: "native resource other than storage", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, want: []string{`status.allocatedResources: Unsupported value: "cpu": supported values: "storage"`}},
		{name: "unknown resize status", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: "Shrinking"}
		}, want: []string{`status.allocatedResourceStatuses: Unsupported value: "storage": supported values: "ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress", "NodeResizeInfeasible", "NodeResizePending"`}},
		{name: "bad health reason", mutate: func(c *corev1.PersistentVolumeClaim) {
			c.Status.HealthStatus = &corev1.VolumeHealthStatus{HealthConditions: []corev1.VolumeHealthCondition{{Reason: "not a reason"}}}
		}, want: []string{`status.healthStatus.healthConditions[0].reason: Invalid value: "not a reason": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, ValidatePersistentVolumeClaimStatusUpdate(claim(tc.mutate), claim()), tc.want)
		})
	}
}
