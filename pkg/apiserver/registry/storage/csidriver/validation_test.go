package csidriver

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// errorSummary is each error as "Type path: detail", sorted.
func errorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s: %s", string(e.Type), e.Field, e.Detail))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := errorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func driver(mutate ...func(*storagev1.CSIDriver)) *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io", ResourceVersion: "1"}}
	SetDefaults(d)
	for _, m := range mutate {
		m(d)
	}
	return d
}

func TestSetDefaults(t *testing.T) {
	d := &storagev1.CSIDriver{}
	SetDefaults(d)
	s := d.Spec
	got := fmt.Sprintln(*s.AttachRequired, *s.PodInfoOnMount, *s.StorageCapacity, *s.FSGroupPolicy, s.VolumeLifecycleModes,
		*s.RequiresRepublish, *s.SELinuxMount, *s.PreventPodSchedulingIfMissing)
	if want := "true false false ReadWriteOnceWithFSType [Persistent] false false false\n"; got != want {
		t.Errorf("defaults %s, want %s", got, want)
	}
	kept := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Ephemeral"}}}
	SetDefaults(kept)
	if *kept.Spec.AttachRequired || kept.Spec.VolumeLifecycleModes[0] != "Ephemeral" || len(kept.Spec.VolumeLifecycleModes) != 1 {
		t.Errorf("set values overwritten: %+v", kept.Spec)
	}
}

func TestValidateCSIDriver(t *testing.T) {
	tests := []struct {
		name string
		d    *storagev1.CSIDriver
		want []string
	}{
		{name: "valid", d: driver(func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](600)}, {Audience: ""}}
			d.Spec.ServiceAccountTokenInSecrets = ptr.To(true)
			d.Spec.NodeAllocatableUpdatePeriodSeconds = ptr.To[int64](10)
			d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Persistent", "Ephemeral"}
		})},
		{name: "bad name", d: driver(func(d *storagev1.CSIDriver) { d.Name = "Bad_Driver" }),
			want: []string{"FieldValueInvalid metadata.name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{name: "required booleans missing", d: driver(func(d *storagev1.CSIDriver) {
			d.Spec.AttachRequired, d.Spec.PodInfoOnMount, d.Spec.StorageCapacity, d.Spec.SELinuxMount, d.Spec.PreventPodSchedulingIfMissing = nil, nil, nil, nil, nil
		}), want: []string{
			"FieldValueRequired spec.attachedRequired: ", "FieldValueRequired spec.podInfoOnMount: ", "FieldValueRequired spec.storageCapacity: ",
			"FieldValueRequired spec.seLinuxMount: ", "FieldValueRequired spec.preventPodSchedulingIfMissing: ",
		}},
		{name: "bad fsGroupPolicy", d: driver(func(d *storagev1.CSIDriver) { d.Spec.FSGroupPolicy = ptr.To(storagev1.FSGroupPolicy("Always")) }),
			want: []string{`FieldValueNotSupported spec.fsGroupPolicy: supported values: "File", "None", "ReadWriteOnceWithFSType"`}},
		{name: "bad lifecycle mode", d: driver(func(d *storagev1.CSIDriver) { d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Forever"} }),
			want: []string{`FieldValueNotSupported spec.volumeLifecycleModes: supported values: "Persistent", "Ephemeral"`}},
		{name: "token requests", d: driver(func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{
				{Audience: "a", ExpirationSeconds: ptr.To[int64](60)}, {Audience: "a"}, {Audience: "b", ExpirationSeconds: ptr.To[int64](1<<32 + 1)},
			}
		}), want: []string{
			"FieldValueInvalid spec.tokenRequests[0].expirationSeconds: may not specify a duration less than 10 minutes",
			`FieldValueDuplicate spec.tokenRequests[1].audience: `,
			"FieldValueInvalid spec.tokenRequests[2].expirationSeconds: may not specify a duration larger than 2^32 seconds",
		}},
		{name: "tokens in secrets without requests", d: driver(func(d *storagev1.CSIDriver) { d.Spec.ServiceAccountTokenInSecrets = ptr.To(true) }),
			want: []string{"FieldValueInvalid spec.serviceAccountTokenInSecrets: serviceAccountTokenInSecrets is set but no tokenRequests are specified"}},
		{name: "short update period", d: driver(func(d *storagev1.CSIDriver) { d.Spec.NodeAllocatableUpdatePeriodSeconds = ptr.To[int64](5) }),
			want: []string{"FieldValueInvalid spec.nodeAllocatableUpdatePeriodSeconds: must be greater than or equal to 10 seconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateCSIDriver(tt.d), tt.want)
		})
	}
}

func TestValidateCSIDriverUpdate(t *testing.T) {
	ctx := context.Background()
	old := driver()
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, driver(func(d *storagev1.CSIDriver) { d.Spec.AttachRequired = ptr.To(false) }), old),
		[]string{"FieldValueInvalid spec.attachedRequired: field is immutable"})
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, driver(func(d *storagev1.CSIDriver) {
		d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Ephemeral"}
	}), old), []string{"FieldValueInvalid spec.volumeLifecycleModes: field is immutable"})
	mutable := driver(func(d *storagev1.CSIDriver) {
		d.Spec.PodInfoOnMount, d.Spec.StorageCapacity, d.Spec.RequiresRepublish = ptr.To(true), ptr.To(true), ptr.To(true)
		d.Spec.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy)
	})
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, mutable, old), nil)
	Strategy.PrepareForUpdate(ctx, mutable, old)
	if mutable.Generation != old.Generation+1 {
		t.Errorf("generation %d, want %d", mutable.Generation, old.Generation+1)
	}
	if Strategy.AllowUnconditionalUpdate(ctx) {
		t.Error("an update must name a resourceVersion, as upstream's")
	}
}

func TestWarnings(t *testing.T) {
	ctx := context.Background()
	d := driver(func(d *storagev1.CSIDriver) { d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a"}} })
	if w := Strategy.WarningsOnCreate(ctx, d); !slices.Equal(w, []string{tokenInSecretsWarning}) {
		t.Errorf("create warnings %q", w)
	}
	if w := Strategy.WarningsOnUpdate(ctx, d, d.DeepCopy()); w != nil {
		t.Errorf("update warnings %q, want none while the requests stay", w)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	d := driver(func(d *storagev1.CSIDriver) {
		d.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
		d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "gcp"}}
	})
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tbl.Rows[0].Cells); got != "[hostpath.csi.k8s.io true false false vault,gcp false Persistent 3h]" {
		t.Errorf("row %s", got)
	}
	if n := len(tbl.ColumnDefinitions); n != 8 {
		t.Errorf("%d columns, want 8", n)
	}
}
