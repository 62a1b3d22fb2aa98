package persistentvolumeclaim

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get persistentvolumeclaims`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.PersistentVolumeClaim] {
	// The descriptions are upstream's: the API types' documentation.
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
		{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
		table.AgeColumn(),
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
	}, claimRow)
}

// claimRow is kubectl's row: capacity and access modes only once bound (from the status),
// "Terminating" for a claim being deleted.
func claimRow(c *corev1.PersistentVolumeClaim, now time.Time) metav1.TableRow {
	phase := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if c.Spec.VolumeName != "" {
		modes = AccessModesString(c.Status.AccessModes)
		q := c.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
	}
	return metav1.TableRow{Cells: []any{
		c.Name, phase, c.Spec.VolumeName, capacity, modes, volumehelpers.GetPersistentVolumeClaimClass(c),
		OrUnset(c.Spec.VolumeAttributesClassName), table.Age(c, now), OrUnset((*string)(c.Spec.VolumeMode)),
	}}
}

// AccessModesString is kubectl's short form of access modes, "RWO,ROX,RWX,RWOP" in that
// order whatever the order given, each once.
func AccessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	var short []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		for _, given := range modes {
			if given == m.mode {
				short = append(short, m.short)
				break
			}
		}
	}
	return strings.Join(short, ",")
}

// OrUnset is an optional string cell: its value, or "<unset>".
func OrUnset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}
