package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

var (
	// errEnqueuedVirtualDelete: the object is gone and a virtual delete event was queued; the
	// graph builder takes it from there.
	errEnqueuedVirtualDelete = errors.New("enqueued virtual delete event")
	// errNamespacedOwnerOfClusterScoped will not resolve on retry.
	errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")
)

// restMappingError: the REST mapper does not know apiVersion/kind.
type restMappingError struct{ kind, version string }

func (e *restMappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s.", e.version, e.kind)
}

// attemptToDeleteItem looks the node's object up and deletes it if all its owners are gone
// (uid-preconditioned, so a successor of the same name is safe), removes references to absent
// or waiting owners from it if an owner remains, deletes it in the foreground if an owner
// waits for it and it has dependents, or, for an owner being deleted in the foreground,
// drops the finalizer once no blocking dependent is left.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, item *node) error {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Processing item", "item", item.identity, "virtual", !item.isObserved())

	// Deletion is a one-way trip: wait for the object to go, then process its dependents.
	if item.isBeingDeleted() && !item.isDeletingDependents() {
		logger.V(5).Info("Processing item returned at once, because its DeletionTimestamp is non-nil", "item", item.identity)
		return nil
	}
	latest, err := gc.getObject(ctx, item.identity)
	switch {
	case apierrors.IsNotFound(err):
		logger.V(5).Info("Item not found, generating a virtual delete event", "item", item.identity)
		gc.graph.enqueueVirtualDelete(item.identity)
		return errEnqueuedVirtualDelete
	case err != nil:
		return err
	}
	if latest.GetUID() != item.identity.UID {
		logger.V(5).Info("UID doesn't match, item not found, generating a virtual delete event", "item", item.identity)
		gc.graph.enqueueVirtualDelete(item.identity)
		return errEnqueuedVirtualDelete
	}

	if item.isDeletingDependents() {
		return gc.processDeletingDependentsItem(ctx, item)
	}
	if len(latest.GetOwnerReferences()) == 0 {
		logger.V(2).Info("Item doesn't have an owner, continue on next item", "item", item.identity)
		return nil
	}
	owners, err := gc.classifyReferences(ctx, item, latest.GetOwnerReferences())
	if err != nil {
		return err
	}
	logger.V(5).Info("Classify item's references", "item", item.identity,
		"solid", owners.solid, "dangling", owners.dangling, "waitingForDependentsDeletion", owners.waiting)

	deps := item.getDependents()
	dependentWaiting := slices.ContainsFunc(deps, (*node).isDeletingDependents)
	plan := planDeletion(latest.GetFinalizers(), owners, len(deps) > 0, dependentWaiting)
	switch plan.action {
	case keep:
		logger.V(2).Info("Item has at least one existing owner, will not garbage collect", "item", item.identity, "owner", owners.solid)
		return nil
	case removeReferences:
		logger.V(2).Info("Remove dangling references and waiting references for item", "item", item.identity,
			"dangling", owners.dangling, "waitingForDependentsDeletion", owners.waiting)
		return gc.patch(ctx, item, deleteOwnerRefStrategicMergePatch(item.identity.UID, plan.removeOwners...),
			func(n *node) ([]byte, error) { return gc.deleteOwnerRefJSONMergePatch(ctx, n, plan.removeOwners...) })
	case deleteForeground:
		if plan.unblockFirst {
			logger.V(2).Info("Processing item, some of its owners and its dependent have FinalizerDeletingDependents, to prevent potential cycle, its ownerReferences are going to be modified to be non-blocking, then the item is going to be deleted with Foreground",
				"item", item.identity)
			smp, err := unblockOwnerReferencesStrategicMergePatch(item)
			if err != nil {
				return err
			}
			if err := gc.patch(ctx, item, smp, func(n *node) ([]byte, error) { return gc.unblockOwnerReferencesJSONMergePatch(ctx, n) }); err != nil {
				return err
			}
		}
		logger.V(2).Info("At least one owner of item has FinalizerDeletingDependents, and the item itself has dependents, so it is going to be deleted in Foreground",
			"item", item.identity)
	default:
		logger.V(2).Info("Deleting item", "item", item.identity, "propagationPolicy", plan.policy)
	}
	err = gc.deleteObject(ctx, item.identity, latest.ResourceVersion, latest.OwnerReferences, plan.policy)
	if apierrors.IsNotFound(err) {
		gc.graph.enqueueVirtualDelete(item.identity)
		return errEnqueuedVirtualDelete
	}
	return err
}

// processDeletingDependentsItem finalizes an owner being deleted in the foreground once no
// dependent blocks it, and otherwise queues its blocking dependents.
func (gc *GarbageCollector) processDeletingDependentsItem(ctx context.Context, item *node) error {
	logger := klog.FromContext(ctx)
	blocking := item.blockingDependents()
	if len(blocking) == 0 {
		logger.V(2).Info("Remove DeleteDependents finalizer for item", "item", item.identity)
		return gc.removeFinalizer(ctx, item, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.isDeletingDependents() {
			logger.V(2).Info("Adding dependent to attemptToDelete, because its owner is deletingDependents", "item", item.identity, "dependent", dep.identity)
			gc.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// classifyReferences asks about each owner (see ownerClasses).
func (gc *GarbageCollector) classifyReferences(ctx context.Context, item *node, refs []metav1.OwnerReference) (ownerClasses, error) {
	var c ownerClasses
	for _, ref := range refs {
		dangling, owner, err := gc.isDangling(ctx, ref, item)
		switch {
		case err != nil:
			return ownerClasses{}, err
		case dangling:
			c.dangling = append(c.dangling, ref)
		case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
			c.waiting = append(c.waiting, ref)
		default:
			c.solid = append(c.solid, ref)
		}
	}
	return c, nil
}

// isDangling reports whether ref names an object that does not exist, by the absent-owner
// cache or a live GET (the owner with ref's UID must exist in the dependent's namespace, or be
// cluster-scoped); it returns the owner when it got it.
func (gc *GarbageCollector) isDangling(ctx context.Context, ref metav1.OwnerReference, item *node) (bool, *metav1.PartialObjectMetadata, error) {
	logger := klog.FromContext(ctx)
	key := objectReference{OwnerReference: coordinates(ref)}
	if gc.absent.has(key) {
		logger.V(5).Info("According to the absentOwnerCache, item's owner does not exist", "item", item.identity, "owner", ref)
		return true, nil, nil
	}
	key.Namespace = item.identity.Namespace
	if gc.absent.has(key) {
		logger.V(5).Info("According to the absentOwnerCache, item's owner does not exist in namespace", "item", item.identity, "owner", ref)
		return true, nil, nil
	}
	resource, namespaced, err := gc.apiResource(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if !namespaced {
		key.Namespace = ""
	}
	if item.identity.Namespace == "" && namespaced {
		logger.V(2).Info("Item is cluster-scoped, but refers to a namespaced owner", "item", item.identity, "owner", ref)
		return false, nil, errNamespacedOwnerOfClusterScoped
	}
	owner, err := gc.metadata.Resource(resource).Namespace(key.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		gc.absent.add(key)
		logger.V(5).Info("Item's owner is not found", "item", item.identity, "owner", ref)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	case owner.UID != ref.UID:
		logger.V(5).Info("Item's owner is not found, UID mismatch", "item", item.identity, "owner", ref)
		gc.absent.add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

// apiResource maps apiVersion and kind to their resource and scope.
func (gc *GarbageCollector) apiResource(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	mapping, err := gc.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, &restMappingError{kind: kind, version: apiVersion}
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// namespaceFor is the namespace to address an object of the resource in: none if
// cluster-scoped.
func namespaceFor(namespaced bool, namespace string) string {
	if namespaced {
		return namespace
	}
	return ""
}

func (gc *GarbageCollector) getObject(ctx context.Context, item objectReference) (*metav1.PartialObjectMetadata, error) {
	resource, namespaced, err := gc.apiResource(item.APIVersion, item.Kind)
	if err != nil {
		return nil, err
	}
	if namespaced && item.Namespace == "" {
		// Only a cluster-scoped dependent naming a namespaced owner gets here.
		return nil, errNamespacedOwnerOfClusterScoped
	}
	return gc.metadata.Resource(resource).Namespace(namespaceFor(namespaced, item.Namespace)).Get(ctx, item.Name, metav1.GetOptions{})
}

// deleteObject deletes item with UID (and, when given, resourceVersion) preconditions. A
// conflict on the resource version alone, with the owners unchanged, is retried without it, so
// that an object updated often is still collected.
func (gc *GarbageCollector) deleteObject(ctx context.Context, item objectReference, resourceVersion string, ownersAtResourceVersion []metav1.OwnerReference, policy metav1.DeletionPropagation) error {
	resource, namespaced, err := gc.apiResource(item.APIVersion, item.Kind)
	if err != nil {
		return err
	}
	uid := item.UID
	preconditions := metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		preconditions.ResourceVersion = &resourceVersion
	}
	client := gc.metadata.Resource(resource).Namespace(namespaceFor(namespaced, item.Namespace))
	err = client.Delete(ctx, item.Name, metav1.DeleteOptions{Preconditions: &preconditions, PropagationPolicy: &policy})
	if apierrors.IsConflict(err) && resourceVersion != "" {
		live, liveErr := client.Get(ctx, item.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(liveErr) {
			return liveErr
		}
		if liveErr == nil && live.UID == item.UID && live.ResourceVersion != resourceVersion && reflect.DeepEqual(live.OwnerReferences, ownersAtResourceVersion) {
			return gc.deleteObject(ctx, item, "", nil, policy)
		}
	}
	return err
}

func (gc *GarbageCollector) patchObject(ctx context.Context, item objectReference, data []byte, pt types.PatchType) error {
	resource, namespaced, err := gc.apiResource(item.APIVersion, item.Kind)
	if err != nil {
		return err
	}
	_, err = gc.metadata.Resource(resource).Namespace(namespaceFor(namespaced, item.Namespace)).Patch(ctx, item.Name, pt, data, metav1.PatchOptions{})
	return err
}

// patch applies the strategic merge patch smp, or for resources without strategic merge
// patch (custom resources) the JSON merge patch jmp makes.
func (gc *GarbageCollector) patch(ctx context.Context, item *node, smp []byte, jmp func(*node) ([]byte, error)) error {
	err := gc.patchObject(ctx, item.identity, smp, types.StrategicMergePatchType)
	if !apierrors.IsUnsupportedMediaType(err) {
		return err
	}
	data, err := jmp(item)
	if err != nil {
		return err
	}
	return gc.patchObject(ctx, item.identity, data, types.MergePatchType)
}

// removeFinalizer removes finalizer from owner, with its resource version as a precondition,
// retrying conflicts.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, owner *node, finalizer string) error {
	logger := klog.FromContext(ctx)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj, err := gc.getObject(ctx, owner.identity)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot finalize owner %s, because cannot get it: %w. The garbage collector will retry later", owner.identity, err)
		}
		if !slices.Contains(obj.Finalizers, finalizer) {
			logger.V(5).Info("Finalizer already removed from object", "finalizer", finalizer, "object", owner.identity)
			return nil
		}
		var finalizers []string // null when none is left, as upstream's patch
		for _, f := range obj.Finalizers {
			if f != finalizer {
				finalizers = append(finalizers, f)
			}
		}
		data, err := json.Marshal(finalizersPatch{Metadata: finalizersPatchMeta{ResourceVersion: obj.ResourceVersion, Finalizers: finalizers}})
		if err != nil {
			return fmt.Errorf("unable to finalize %s due to an error serializing patch: %w", owner.identity, err)
		}
		return gc.patchObject(ctx, owner.identity, data, types.MergePatchType)
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("updateMaxRetries(%d) has reached. The garbage collector will retry later for owner %v", retry.DefaultBackoff.Steps, owner.identity)
	}
	return err
}

// orphanParallelism bounds the concurrent patches of one owner's dependents.
const orphanParallelism = 16

// orphanDependents removes owner's reference from each dependent (uid-preconditioned).
func (gc *GarbageCollector) orphanDependents(ctx context.Context, owner objectReference, dependents []*node) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, orphanParallelism)
	)
	for _, dep := range dependents {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// This goroutine is outside the worker's panic boundary: it has its own.
			err := recovery.Sync(ctx, controllerName, func() error {
				return gc.patch(ctx, dep, deleteOwnerRefStrategicMergePatch(dep.identity.UID, owner.UID),
					func(n *node) ([]byte, error) { return gc.deleteOwnerRefJSONMergePatch(ctx, n, owner.UID) })
			})
			// A dependent without the reference is no error to a strategic merge patch.
			if err != nil && !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("orphaning %s failed, %w", dep.identity, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) != 0 {
		return fmt.Errorf("failed to orphan dependents of owner %s, got errors: %w", owner, errors.Join(errs...))
	}
	klog.FromContext(ctx).V(5).Info("Successfully updated all dependents", "owner", owner)
	return nil
}
