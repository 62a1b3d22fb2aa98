package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// action is what attemptToDelete does with an object that has owners.
type action int

const (
	// keep: an owner exists and nothing is to be changed.
	keep action = iota
	// removeReferences: an owner exists; the references to absent owners and to owners
	// waiting for their dependents' deletion are removed (the latter would otherwise wait
	// for this object for ever).
	removeReferences
	// deleteForeground: an owner waits for its dependents' deletion and this object has
	// dependents of its own, so it is deleted in the foreground too (after its references
	// are made non-blocking when a dependent is itself waiting: a possible cycle).
	deleteForeground
	// deleteObject: no owner is left; the object goes with propagation policy.
	deleteObject
)

// deletionPlan is what attemptToDelete decided for one object.
type deletionPlan struct {
	action action
	// removeOwners are the UIDs of the references to remove (removeReferences).
	removeOwners []types.UID
	// unblockFirst makes the object's blocking references non-blocking before the
	// foreground delete (deleteForeground).
	unblockFirst bool
	policy       metav1.DeletionPropagation
}

// ownerClasses sorts an object's owner references by what the API server said about the
// owners: solid owners exist and are not being deleted in the foreground; dangling ones do not
// exist; waiting ones exist, being deleted with the foregroundDeletion finalizer.
type ownerClasses struct {
	solid, dangling, waiting []metav1.OwnerReference
}

// planDeletion decides the fate of an object with owners, as upstream's attemptToDeleteItem:
// finalizers are the object's, hasDependents whether the graph knows dependents of it, and
// dependentDeletingDependents whether one of those is itself being deleted in the foreground.
func planDeletion(finalizers []string, owners ownerClasses, hasDependents, dependentDeletingDependents bool) deletionPlan {
	switch {
	case len(owners.solid) != 0:
		if len(owners.dangling) == 0 && len(owners.waiting) == 0 {
			return deletionPlan{action: keep}
		}
		var uids []types.UID
		for _, ref := range slices.Concat(owners.dangling, owners.waiting) {
			uids = append(uids, ref.UID)
		}
		return deletionPlan{action: removeReferences, removeOwners: uids}
	case len(owners.waiting) != 0 && hasDependents:
		return deletionPlan{action: deleteForeground, unblockFirst: dependentDeletingDependents, policy: metav1.DeletePropagationForeground}
	}
	// No solid owner and none waiting for this object: collect it, honouring a finalizer it
	// already has.
	policy := metav1.DeletePropagationBackground
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	return deletionPlan{action: deleteObject, policy: policy}
}
