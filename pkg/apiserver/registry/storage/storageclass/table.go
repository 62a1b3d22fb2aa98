package storageclass

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get storageclasses`.
func NewTableConvertor() rest.TableConvertor { return &convertor{clock: clock.RealClock{}} }

// convertor prints classes as upstream's printer: in a list, the effective default class
// (the newest of those marked default) has "(default)" after its name. A class printed
// alone (a get by name, a watch event) has no mark, as upstream's.
type convertor struct{ clock clock.PassiveClock }

func (c *convertor) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	def := ""
	if list, ok := obj.(*storagev1.StorageClassList); ok {
		def = EffectiveDefault(list.Items)
	}
	return newTableConvertor(c.clock, def).ConvertToTable(ctx, obj, tableOptions)
}

func newTableConvertor(clk clock.PassiveClock, effectiveDefault string) *table.Convertor[*storagev1.StorageClass] {
	doc := storagev1.StorageClass{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Provisioner", Type: "string", Description: doc["provisioner"]},
		{Name: "ReclaimPolicy", Type: "string", Description: doc["reclaimPolicy"]},
		{Name: "VolumeBindingMode", Type: "string", Description: doc["volumeBindingMode"]},
		{Name: "AllowVolumeExpansion", Type: "string", Description: doc["allowVolumeExpansion"]},
		table.AgeColumn(),
	}, func(sc *storagev1.StorageClass, now time.Time) metav1.TableRow {
		name := sc.Name
		if effectiveDefault != "" && name == effectiveDefault {
			name += " (default)"
		}
		reclaim := string(corev1.PersistentVolumeReclaimDelete)
		if sc.ReclaimPolicy != nil {
			reclaim = string(*sc.ReclaimPolicy)
		}
		binding := string(storagev1.VolumeBindingImmediate)
		if sc.VolumeBindingMode != nil {
			binding = string(*sc.VolumeBindingMode)
		}
		expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		return metav1.TableRow{Cells: []any{name, sc.Provisioner, reclaim, binding, expand, table.Age(sc, now)}}
	})
}

// EffectiveDefault names the class claims without one get when several are marked default:
// the newest, and of those created in the same second the first by name; "" when none is.
func EffectiveDefault(classes []storagev1.StorageClass) string {
	var best *storagev1.StorageClass
	for i := range classes {
		sc := &classes[i]
		if !IsDefault(sc) {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = sc
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}
