package garbagecollector

import (
	"context"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

func (e eventType) String() string {
	switch e {
	case addEvent:
		return "add"
	case updateEvent:
		return "update"
	default:
		return "delete"
	}
}

// event is one change to the graph: an informer's notification, or a virtual delete the
// collector makes for a node the API server says does not exist.
type event struct {
	virtual   bool
	eventType eventType
	obj       metav1.Object
	oldObj    metav1.Object // an update's old object, for the deletion transitions
	gvk       schema.GroupVersionKind
}

// graphBuilder keeps the graph. One goroutine (run) applies the graph changes in their order,
// and queues the nodes a change may have made collectable in attemptToDelete, and the owners
// whose dependents must be orphaned in attemptToOrphan.
type graphBuilder struct {
	changes         workqueue.TypedInterface[*event]
	nodes           *uidToNode
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]
	absent          *absentOwners
	recorder        events.EventRecorder
}

func newGraphBuilder(attemptToDelete, attemptToOrphan workqueue.TypedRateLimitingInterface[*node], absent *absentOwners) *graphBuilder {
	return &graphBuilder{
		changes:         workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[*event]{Name: "garbage_collector_graph_changes"}),
		nodes:           &uidToNode{nodes: map[types.UID]*node{}},
		attemptToDelete: attemptToDelete,
		attemptToOrphan: attemptToOrphan,
		absent:          absent,
	}
}

// handler turns the notifications of the informer of kind into graph changes.
func (gb *graphBuilder) handler(kind schema.GroupVersionKind) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(metav1.Object); ok {
				gb.changes.Add(&event{eventType: addEvent, obj: o, gvk: kind})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok := newObj.(metav1.Object)
			old, _ := oldObj.(metav1.Object)
			if ok {
				gb.changes.Add(&event{eventType: updateEvent, obj: o, oldObj: old, gvk: kind})
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if o, ok := obj.(metav1.Object); ok {
				gb.changes.Add(&event{eventType: deleteEvent, obj: o, gvk: kind})
			}
		},
	}
}

// run applies graph changes until the changes queue is shut down. A change that panics is
// dropped after the panic is recorded: the graph is left as it was before it, and the
// informer's next event for the object brings it up to date.
func (gb *graphBuilder) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		ev, quit := gb.changes.Get()
		if quit {
			return
		}
		err := recovery.Sync(ctx, controllerName, func() error {
			gb.processGraphChange(logger, ev)
			return nil
		})
		if err != nil {
			logger.Error(err, "Applying a graph change failed", "object", klog.KObj(ev.obj), "kind", ev.gvk, "eventType", ev.eventType)
		}
		gb.changes.Done(ev)
	}
}

// enqueueVirtualDelete queues a delete event for ref, known to be absent from the API server.
func (gb *graphBuilder) enqueueVirtualDelete(ref objectReference) {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	gb.changes.Add(&event{
		virtual:   true,
		eventType: deleteEvent,
		gvk:       gv.WithKind(ref.Kind),
		obj: &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, UID: ref.UID, Name: ref.Name},
		},
	})
}

func identityFromEvent(ev *event) objectReference {
	return objectReference{
		OwnerReference: metav1.OwnerReference{
			APIVersion: ev.gvk.GroupVersion().String(),
			Kind:       ev.gvk.Kind,
			UID:        ev.obj.GetUID(),
			Name:       ev.obj.GetName(),
		},
		Namespace: ev.obj.GetNamespace(),
	}
}

// processGraphChange applies one change to the graph.
func (gb *graphBuilder) processGraphChange(logger klog.Logger, ev *event) {
	obj := ev.obj
	logger.V(5).Info("GraphBuilder process object", "apiVersion", ev.gvk.GroupVersion().String(), "kind", ev.gvk.Kind,
		"object", klog.KObj(obj), "uid", string(obj.GetUID()), "eventType", ev.eventType, "virtual", ev.virtual)

	existing, found := gb.nodes.read(obj.GetUID())
	if found && !ev.virtual && !existing.isObserved() {
		existing = gb.observe(logger, existing, identityFromEvent(ev))
	}
	switch {
	case ev.eventType != deleteEvent && !found:
		n := &node{
			identity:           identityFromEvent(ev),
			owners:             obj.GetOwnerReferences(),
			deletingDependents: beingDeleted(obj) && hasFinalizer(obj, metav1.FinalizerDeleteDependents),
			beingDeleted:       beingDeleted(obj),
		}
		gb.nodes.write(n)
		gb.addDependentToOwners(logger, n, n.owners)
		// The informer may fold a creation and a deletion into one event.
		gb.processTransitions(logger, ev.oldObj, obj, n)
	case ev.eventType != deleteEvent && found:
		added, removed, changed := referencesDiffs(existing.getOwners(), obj.GetOwnerReferences())
		if len(added) != 0 || len(removed) != 0 || len(changed) != 0 {
			// An owner waiting for its dependents' deletion may just have lost a blocker.
			gb.addUnblockedOwnersToDeleteQueue(logger, removed, changed)
			existing.setOwners(obj.GetOwnerReferences())
			gb.addDependentToOwners(logger, existing, added)
			gb.removeDependentFromOwners(existing, removed)
		}
		if beingDeleted(obj) {
			existing.markBeingDeleted()
		}
		gb.processTransitions(logger, ev.oldObj, obj, existing)
	case ev.eventType == deleteEvent:
		if !found {
			logger.V(5).Info("Item doesn't exist in the graph, this shouldn't happen", "item", obj.GetUID())
			return
		}
		gb.processDelete(logger, ev, existing)
	}
}

// observe turns the virtual node n into an observed one, with the identity the informer
// reports. The dependents that named it by other coordinates are queued for a check, and a
// dependent in another namespace than a namespaced owner gets a Warning event.
func (gb *graphBuilder) observe(logger klog.Logger, n *node, observed objectReference) *node {
	if observed != n.identity {
		_, invalid := partitionDependents(n.getDependents(), observed)
		for _, dep := range invalid {
			if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
				logger.V(2).Info("Item references an owner but does not match namespaces", "item", dep.identity, "owner", observed)
				gb.reportInvalidNamespaceOwnerRef(dep, observed.UID)
			}
			gb.attemptToDelete.Add(dep)
		}
		logger.V(2).Info("Replacing virtual item with observed item", "virtual", n.identity, "observed", observed)
		n = n.clone()
		n.identity = observed
		gb.nodes.write(n)
	}
	n.markObserved()
	return n
}

// processDelete removes a deleted object's node and queues what its absence affects: its
// dependents (now perhaps without owners) and its owners waiting for their dependents. A
// virtual delete removes a node only if its coordinates are those its dependents name it by.
func (gb *graphBuilder) processDelete(logger klog.Logger, ev *event, existing *node) {
	if ev.virtual {
		deleted := identityFromEvent(ev)
		if existing.isObserved() {
			if existing.identity == deleted {
				gb.removeAndRequeue(ev, existing)
				return
			}
			// An observed node is never removed for a virtual delete of other coordinates;
			// the dependents naming those are collectable.
			gb.markAbsentAndRequeue(deleted, existing)
			return
		}
		matching, nonmatching := partitionDependents(existing.getDependents(), deleted)
		if len(nonmatching) == 0 {
			gb.removeAndRequeue(ev, existing)
			return
		}
		// Some dependents name the virtual owner by other coordinates: keep it, and collect
		// those that named it by the ones now known absent.
		if len(matching) > 0 {
			gb.markAbsentAndRequeue(deleted, existing)
		}
		if existing.identity == deleted {
			if alternate := alternateOwnerIdentity(nonmatching, deleted); alternate != nil {
				replacement := existing.clone()
				replacement.identity = *alternate
				gb.nodes.write(replacement)
				gb.attemptToDelete.AddRateLimited(replacement)
			}
		}
		return
	}
	gb.removeAndRequeue(ev, existing)
}

func (gb *graphBuilder) markAbsentAndRequeue(deleted objectReference, existing *node) {
	matching, _ := partitionDependents(existing.getDependents(), deleted)
	if len(matching) == 0 {
		return
	}
	gb.absent.add(deleted)
	for _, dep := range matching {
		gb.attemptToDelete.Add(dep)
	}
}

func (gb *graphBuilder) removeAndRequeue(ev *event, n *node) {
	gb.nodes.delete(n.identity.UID)
	gb.removeDependentFromOwners(n, n.getOwners())
	deps := n.getDependents()
	if len(deps) > 0 {
		gb.absent.add(identityFromEvent(ev))
	}
	for _, dep := range deps {
		gb.attemptToDelete.Add(dep)
	}
	for _, owner := range n.getOwners() {
		if ownerNode, ok := gb.nodes.read(owner.UID); ok && ownerNode.isDeletingDependents() {
			// It may have no blocking dependent left.
			gb.attemptToDelete.Add(ownerNode)
		}
	}
}

// addDependentToOwners adds n to its owners' dependents. An owner not in the graph gets a
// virtual node, queued so that the collector asks the API server whether it exists. n itself
// is queued when one of its references cannot be right as written: to an observed owner by
// other coordinates, to a namespaced owner in another namespace, or to a cluster-scoped
// virtual owner from another namespace (maybe a namespaced kind named from a cluster-scoped
// dependent).
func (gb *graphBuilder) addDependentToOwners(logger klog.Logger, n *node, owners []metav1.OwnerReference) {
	potentiallyInvalid := false
	for _, owner := range owners {
		ownerNode, ok := gb.nodes.read(owner.UID)
		if !ok {
			ownerNode = &node{
				identity: objectReference{OwnerReference: coordinates(owner), Namespace: n.identity.Namespace},
				virtual:  true,
			}
			logger.V(5).Info("Add virtual item", "identity", ownerNode.identity)
			gb.nodes.write(ownerNode)
		}
		ownerNode.addDependent(n)
		if !ok {
			gb.attemptToDelete.Add(ownerNode)
			continue
		}
		if potentiallyInvalid {
			continue
		}
		ownerNamespaced := ownerNode.identity.Namespace != ""
		switch {
		case ownerNamespaced && ownerNode.identity.Namespace != n.identity.Namespace:
			if ownerNode.isObserved() {
				logger.V(2).Info("Item references an owner but does not match namespaces", "item", n.identity, "owner", ownerNode.identity)
				gb.reportInvalidNamespaceOwnerRef(n, owner.UID)
			}
			potentiallyInvalid = true
		case !matchesCoordinates(owner, ownerNode.identity.OwnerReference):
			if ownerNode.isObserved() {
				logger.V(2).Info("Item references an owner with coordinates that do not match the observed identity", "item", n.identity, "owner", ownerNode.identity)
			}
			potentiallyInvalid = true
		case !ownerNamespaced && ownerNode.identity.Namespace != n.identity.Namespace && !ownerNode.isObserved():
			potentiallyInvalid = true
		}
	}
	if potentiallyInvalid {
		gb.attemptToDelete.Add(n)
	}
}

// reportInvalidNamespaceOwnerRef tells, on the dependent, that it names as owner an object of
// another namespace (upstream's event).
func (gb *graphBuilder) reportInvalidNamespaceOwnerRef(n *node, ownerUID types.UID) {
	i := slices.IndexFunc(n.getOwners(), func(r metav1.OwnerReference) bool { return r.UID == ownerUID })
	if i < 0 || gb.recorder == nil {
		return
	}
	invalid := objectReference{OwnerReference: coordinates(n.getOwners()[i]), Namespace: n.identity.Namespace}
	gb.recorder.Eventf(n.identity.eventReference(), nil, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", "GarbageCollect",
		"ownerRef %s does not exist in namespace %q", invalid, n.identity.Namespace)
}

func (gb *graphBuilder) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, owner := range owners {
		if ownerNode, ok := gb.nodes.read(owner.UID); ok {
			ownerNode.deleteDependent(n)
		}
	}
}

// addUnblockedOwnersToDeleteQueue queues the owners a dependent stopped blocking: its
// blocking reference was removed or set to blockOwnerDeletion=false.
func (gb *graphBuilder) addUnblockedOwnersToDeleteQueue(logger klog.Logger, removed []metav1.OwnerReference, changed []ownerRefPair) {
	var unblocked []types.UID
	for _, ref := range removed {
		if blocks(ref) {
			unblocked = append(unblocked, ref.UID)
		}
	}
	for _, c := range changed {
		if blocks(c.oldRef) && !blocks(c.newRef) {
			unblocked = append(unblocked, c.newRef.UID)
		}
	}
	for _, uid := range unblocked {
		n, ok := gb.nodes.read(uid)
		if !ok {
			logger.V(5).Info("Cannot find uid in uidToNode", "uid", uid)
			continue
		}
		gb.attemptToDelete.Add(n)
	}
}

// processTransitions queues an object whose deletion just started with the orphan finalizer
// (to orphan its dependents) or the foregroundDeletion finalizer (its dependents, to be
// deleted, and itself, to be finalized once they are gone).
func (gb *graphBuilder) processTransitions(logger klog.Logger, oldObj, newObj metav1.Object, n *node) {
	if startsDeletionWith(oldObj, newObj, metav1.FinalizerOrphanDependents) {
		logger.V(5).Info("Add item to attemptToOrphan", "item", n.identity)
		gb.attemptToOrphan.Add(n)
		return
	}
	if startsDeletionWith(oldObj, newObj, metav1.FinalizerDeleteDependents) {
		logger.V(2).Info("Add item to attemptToDelete, because it's waiting for its dependents to be deleted", "item", n.identity)
		// A node first added as virtual lacks the flag.
		n.markDeletingDependents()
		for _, dep := range n.getDependents() {
			gb.attemptToDelete.Add(dep)
		}
		gb.attemptToDelete.Add(n)
	}
}

// startsDeletionWith reports whether newObj is being deleted with finalizer while oldObj (nil
// for a first sight) was not.
func startsDeletionWith(oldObj, newObj metav1.Object, finalizer string) bool {
	if !beingDeleted(newObj) || !hasFinalizer(newObj, finalizer) {
		return false
	}
	if oldObj == nil || reflect.ValueOf(oldObj).IsNil() {
		return true
	}
	return !beingDeleted(oldObj) || !hasFinalizer(oldObj, finalizer)
}

func beingDeleted(obj metav1.Object) bool { return obj.GetDeletionTimestamp() != nil }

func hasFinalizer(obj metav1.Object, finalizer string) bool {
	return slices.Contains(obj.GetFinalizers(), finalizer)
}

type ownerRefPair struct{ oldRef, newRef metav1.OwnerReference }

// referencesDiffs compares two lists of owner references by UID.
func referencesDiffs(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []ownerRefPair) {
	oldByUID := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, ref := range old {
		oldByUID[ref.UID] = ref
	}
	for _, ref := range cur {
		prev, ok := oldByUID[ref.UID]
		if !ok {
			added = append(added, ref)
			continue
		}
		if !reflect.DeepEqual(prev, ref) {
			changed = append(changed, ownerRefPair{oldRef: prev, newRef: ref})
		}
		delete(oldByUID, ref.UID)
	}
	for _, ref := range old {
		if _, ok := oldByUID[ref.UID]; ok {
			removed = append(removed, ref)
			delete(oldByUID, ref.UID)
		}
	}
	return added, removed, changed
}

// partitionDependents splits dependents into those with a reference matching owner's
// coordinates and those naming owner's UID by other coordinates (or, for a namespaced owner,
// from another namespace). A dependent with both kinds of reference is in both.
func partitionDependents(dependents []*node, owner objectReference) (matching, nonmatching []*node) {
	ownerNamespaced := owner.Namespace != ""
	for _, dep := range dependents {
		foundMatch, foundMismatch := false, false
		if ownerNamespaced && owner.Namespace != dep.identity.Namespace {
			foundMismatch = true
		} else {
			for _, ref := range dep.getOwners() {
				if ref.UID != owner.UID {
					continue
				}
				if matchesCoordinates(ref, owner.OwnerReference) {
					foundMatch = true
				} else {
					foundMismatch = true
				}
			}
		}
		if foundMatch {
			matching = append(matching, dep)
		}
		if foundMismatch {
			nonmatching = append(nonmatching, dep)
		}
	}
	return matching, nonmatching
}

func referenceLess(a, b objectReference) bool {
	// kind and apiVersion first, so that kinds order the same cluster-scoped or namespaced
	switch {
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	case a.APIVersion != b.APIVersion:
		return a.APIVersion < b.APIVersion
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	case a.Name != b.Name:
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// alternateOwnerIdentity is another identity deps name absent's UID by: the first (in
// referenceLess order) after absent, else the first; nil if there is none. Trying them in
// turn, the collector checks every identity a virtual owner is named by.
func alternateOwnerIdentity(deps []*node, absent objectReference) *objectReference {
	absentClusterScoped := absent.Namespace == ""
	seen := map[objectReference]bool{absent: true}
	var first, firstFollowing *objectReference
	for _, dep := range deps {
		for _, ref := range dep.getOwners() {
			if ref.UID != absent.UID {
				continue
			}
			if matchesCoordinates(ref, absent.OwnerReference) && (absentClusterScoped || absent.Namespace == dep.identity.Namespace) {
				continue
			}
			alt := objectReference{OwnerReference: coordinates(ref), Namespace: dep.identity.Namespace}
			if absentClusterScoped && alt.APIVersion == absent.APIVersion && alt.Kind == absent.Kind {
				// this kind is known to be cluster-scoped
				alt.Namespace = ""
			}
			if seen[alt] {
				continue
			}
			seen[alt] = true
			if first == nil || referenceLess(alt, *first) {
				first = &alt
			}
			if referenceLess(absent, alt) && (firstFollowing == nil || referenceLess(alt, *firstFollowing)) {
				firstFollowing = &alt
			}
		}
	}
	if firstFollowing != nil {
		return firstFollowing
	}
	return first
}
