package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The patches the collector sends. Strategic merge patches name the object's UID, which the
// API server checks as a precondition; JSON merge patches (for custom resources) carry the
// resource version instead.

type finalizersPatch struct {
	Metadata finalizersPatchMeta `json:"metadata"`
}

type finalizersPatchMeta struct {
	ResourceVersion string   `json:"resourceVersion"`
	Finalizers      []string `json:"finalizers"`
}

type ownerReferencesPatch struct {
	Metadata ownerReferencesPatchMeta `json:"metadata"`
}

type ownerReferencesPatchMeta struct {
	ResourceVersion string                  `json:"resourceVersion"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
}

// deleteOwnerRefStrategicMergePatch removes the references to ownerUIDs from the object
// dependentUID (upstream's GenerateDeleteOwnerRefStrategicMergeBytes).
func deleteOwnerRefStrategicMergePatch(dependentUID types.UID, ownerUIDs ...types.UID) []byte {
	refs := make([]map[string]string, 0, len(ownerUIDs))
	for _, uid := range ownerUIDs {
		refs = append(refs, map[string]string{"$patch": "delete", "uid": string(uid)})
	}
	patch := map[string]any{"metadata": map[string]any{"uid": dependentUID, "ownerReferences": refs}}
	data, _ := json.Marshal(patch) // maps of strings always marshal
	return data
}

// unblockOwnerReferencesStrategicMergePatch sets blockOwnerDeletion=false on n's blocking
// references (merged by UID).
func unblockOwnerReferencesStrategicMergePatch(n *node) ([]byte, error) {
	var refs []metav1.OwnerReference
	for _, owner := range n.getOwners() {
		if blocks(owner) {
			owner.BlockOwnerDeletion = ptr.To(false)
			refs = append(refs, owner)
		}
	}
	return json.Marshal(metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: n.identity.UID, OwnerReferences: refs}})
}

// cachedMetadata is the object of n from its monitor's cache, or from the API server when no
// monitor holds it.
func (gc *GarbageCollector) cachedMetadata(ctx context.Context, n *node) (metav1.Object, error) {
	resource, namespaced, err := gc.apiResource(n.identity.APIVersion, n.identity.Kind)
	if err != nil {
		return nil, err
	}
	namespace := namespaceFor(namespaced, n.identity.Namespace)
	if store, ok := gc.monitors.store(resource); ok {
		key := n.identity.Name
		if namespace != "" {
			key = namespace + "/" + key
		}
		obj, exists, err := store.GetByKey(key)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the cache: %w", n.identity, err)
		}
		if exists {
			if m, ok := obj.(metav1.Object); ok {
				return m, nil
			}
		}
	}
	return gc.metadata.Resource(resource).Namespace(namespace).Get(ctx, n.identity.Name, metav1.GetOptions{})
}

// deleteOwnerRefJSONMergePatch is the JSON merge patch removing the references to ownerUIDs.
func (gc *GarbageCollector) deleteOwnerRefJSONMergePatch(ctx context.Context, n *node, ownerUIDs ...types.UID) ([]byte, error) {
	obj, err := gc.cachedMetadata(ctx, n)
	if err != nil {
		return nil, err
	}
	patch := ownerReferencesPatch{Metadata: ownerReferencesPatchMeta{ResourceVersion: obj.GetResourceVersion()}}
	for _, ref := range obj.GetOwnerReferences() {
		if !slices.Contains(ownerUIDs, ref.UID) {
			patch.Metadata.OwnerReferences = append(patch.Metadata.OwnerReferences, ref)
		}
	}
	return json.Marshal(patch)
}

// unblockOwnerReferencesJSONMergePatch is the JSON merge patch setting blockOwnerDeletion=false
// on all of n's references.
func (gc *GarbageCollector) unblockOwnerReferencesJSONMergePatch(ctx context.Context, n *node) ([]byte, error) {
	obj, err := gc.cachedMetadata(ctx, n)
	if err != nil {
		return nil, err
	}
	patch := ownerReferencesPatch{Metadata: ownerReferencesPatchMeta{ResourceVersion: obj.GetResourceVersion()}}
	for _, owner := range n.getOwners() {
		owner.BlockOwnerDeletion = ptr.To(false)
		patch.Metadata.OwnerReferences = append(patch.Metadata.OwnerReferences, owner)
	}
	return json.Marshal(patch)
}
