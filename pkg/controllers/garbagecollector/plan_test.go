package garbagecollector

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPlanDeletion(t *testing.T) {
	ref := func(uid string) metav1.OwnerReference { return metav1.OwnerReference{UID: types.UID(uid)} }
	refs := func(uids ...string) []metav1.OwnerReference {
		var out []metav1.OwnerReference
		for _, u := range uids {
			out = append(out, ref(u))
		}
		return out
	}
	tests := []struct {
		name             string
		finalizers       []string
		owners           ownerClasses
		hasDependents    bool
		dependentWaiting bool
		want             deletionPlan
	}{
		{name: "a solid owner keeps it", owners: ownerClasses{solid: refs("a")}, want: deletionPlan{action: keep}},
		{name: "a solid owner and dangling and waiting ones: the latter are removed",
			owners: ownerClasses{solid: refs("a"), dangling: refs("b"), waiting: refs("c")},
			want:   deletionPlan{action: removeReferences, removeOwners: []types.UID{"b", "c"}}},
		{name: "all dangling: background", owners: ownerClasses{dangling: refs("a", "b")},
			want: deletionPlan{action: deleteObject, policy: metav1.DeletePropagationBackground}},
		{name: "all dangling with an orphan finalizer: orphan", finalizers: []string{metav1.FinalizerOrphanDependents},
			owners: ownerClasses{dangling: refs("a")}, want: deletionPlan{action: deleteObject, policy: metav1.DeletePropagationOrphan}},
		{name: "all dangling with a foreground finalizer: foreground", finalizers: []string{metav1.FinalizerDeleteDependents},
			owners: ownerClasses{dangling: refs("a")}, want: deletionPlan{action: deleteObject, policy: metav1.DeletePropagationForeground}},
		{name: "waiting owner, no dependents: deleted by its own finalizers", owners: ownerClasses{waiting: refs("a"), dangling: refs("b")},
			want: deletionPlan{action: deleteObject, policy: metav1.DeletePropagationBackground}},
		{name: "waiting owner and dependents: foreground", owners: ownerClasses{waiting: refs("a")}, hasDependents: true,
			want: deletionPlan{action: deleteForeground, policy: metav1.DeletePropagationForeground}},
		{name: "waiting owner and a dependent waiting too: unblock first", owners: ownerClasses{waiting: refs("a")}, hasDependents: true, dependentWaiting: true,
			want: deletionPlan{action: deleteForeground, unblockFirst: true, policy: metav1.DeletePropagationForeground}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planDeletion(tt.finalizers, tt.owners, tt.hasDependents, tt.dependentWaiting)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("planDeletion() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReferencesDiffs(t *testing.T) {
	blocking := metav1.OwnerReference{UID: "b", Name: "b", BlockOwnerDeletion: new(true)}
	unblocked := metav1.OwnerReference{UID: "b", Name: "b", BlockOwnerDeletion: new(false)}
	old := []metav1.OwnerReference{{UID: "a"}, blocking}
	cur := []metav1.OwnerReference{unblocked, {UID: "c"}}
	added, removed, changed := referencesDiffs(old, cur)
	if !reflect.DeepEqual(added, []metav1.OwnerReference{{UID: "c"}}) ||
		!reflect.DeepEqual(removed, []metav1.OwnerReference{{UID: "a"}}) ||
		!reflect.DeepEqual(changed, []ownerRefPair{{oldRef: blocking, newRef: unblocked}}) {
		t.Errorf("referencesDiffs() = %v, %v, %v", added, removed, changed)
	}
}
