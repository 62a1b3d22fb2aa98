package managedfields

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestTrim(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	for _, obj := range []metav1.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: managed}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r", ManagedFields: managed}},
	} {
		got, err := Trim(obj)
		if err != nil {
			t.Fatal(err)
		}
		if m := got.(metav1.Object).GetManagedFields(); m != nil {
			t.Errorf("%T keeps managedFields %v", obj, m)
		}
		if got.(metav1.Object).GetName() == "" {
			t.Errorf("%T lost its name", obj)
		}
	}
	// A tombstone is no object; it passes unchanged.
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p"}
	if got, err := Trim(tombstone); err != nil || got != tombstone {
		t.Errorf("Trim(tombstone) = %v, %v", got, err)
	}
}
