package garbagecollector

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// objectReference is an object's identity in the graph: the coordinates an ownerReference
// names it by (apiVersion, kind, name, uid) and its namespace.
type objectReference struct {
	metav1.OwnerReference
	Namespace string
}

func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// MarshalLog keeps structured logs to the coordinates (no nil pointers of the embedded
// ownerReference's flags).
func (r objectReference) MarshalLog() any {
	return struct {
		Name       string    `json:"name"`
		Namespace  string    `json:"namespace"`
		APIVersion string    `json:"apiVersion"`
		Kind       string    `json:"kind"`
		UID        types.UID `json:"uid"`
	}{r.Name, r.Namespace, r.APIVersion, r.Kind, r.UID}
}

// eventReference is what an event about the object is regarding.
func (r objectReference) eventReference() *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
}

// coordinates is ref without its controller and blockOwnerDeletion flags.
func coordinates(ref metav1.OwnerReference) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
}

func matchesCoordinates(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.Name == b.Name && a.Kind == b.Kind && a.APIVersion == b.APIVersion
}

func blocks(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

// node is one object of the graph: its identity, the owners it lists and the objects that
// list it. It holds nothing else of the object, to keep the graph small.
//
// A node is "virtual" while it is known only because a dependent names it as an owner; the
// attemptToDelete queue asks the API server about it, and a virtual delete event removes it
// if it does not exist. An informer event for its UID makes it observed. Only the graph
// builder's goroutine changes a node's owners and dependents and replaces nodes; the
// collector's workers read them, hence the lock. identity never changes: a node whose
// observed identity differs from the virtual one is replaced by a copy.
type node struct {
	identity objectReference

	mu         sync.RWMutex
	dependents map[*node]struct{} // nil until the first dependent
	owners     []metav1.OwnerReference
	// deletingDependents: the object is being deleted in the foreground (it has the
	// foregroundDeletion finalizer and a deletionTimestamp).
	deletingDependents bool
	beingDeleted       bool
	virtual            bool
}

// clone copies n, its dependents set included, for replacing it under another identity.
func (n *node) clone() *node {
	n.mu.RLock()
	defer n.mu.RUnlock()
	c := &node{
		identity:           n.identity,
		owners:             n.owners,
		deletingDependents: n.deletingDependents,
		beingDeleted:       n.beingDeleted,
		virtual:            n.virtual,
	}
	for dep := range n.dependents {
		c.addDependentLocked(dep)
	}
	return c
}

func (n *node) markBeingDeleted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.beingDeleted = true
}

func (n *node) isBeingDeleted() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.beingDeleted
}

func (n *node) markObserved() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.virtual = false
}

func (n *node) isObserved() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return !n.virtual
}

func (n *node) markDeletingDependents() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deletingDependents = true
}

func (n *node) isDeletingDependents() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.deletingDependents
}

func (n *node) setOwners(owners []metav1.OwnerReference) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.owners = owners
}

// getOwners returns the owners; the slice is replaced, never changed in place, so callers
// may read it without the lock.
func (n *node) getOwners() []metav1.OwnerReference {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.owners
}

func (n *node) addDependent(dep *node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addDependentLocked(dep)
}

func (n *node) addDependentLocked(dep *node) {
	if n.dependents == nil {
		n.dependents = make(map[*node]struct{})
	}
	n.dependents[dep] = struct{}{}
}

func (n *node) deleteDependent(dep *node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.dependents, dep)
}

func (n *node) dependentsLength() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return len(n.dependents)
}

func (n *node) getDependents() []*node {
	n.mu.RLock()
	defer n.mu.RUnlock()
	deps := make([]*node, 0, len(n.dependents))
	for dep := range n.dependents {
		deps = append(deps, dep)
	}
	return deps
}

// blockingDependents are the dependents whose reference to n blocks its deletion.
func (n *node) blockingDependents() []*node {
	var blocking []*node
	for _, dep := range n.getDependents() {
		for _, owner := range dep.getOwners() {
			if owner.UID == n.identity.UID && blocks(owner) {
				blocking = append(blocking, dep)
				break
			}
		}
	}
	return blocking
}

// uidToNode is the graph's index.
type uidToNode struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func (m *uidToNode) write(n *node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[n.identity.UID] = n
}

func (m *uidToNode) read(uid types.UID) (*node, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, ok := m.nodes[uid]
	return n, ok
}

func (m *uidToNode) delete(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.nodes, uid)
}

func (m *uidToNode) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.nodes)
}

// absentOwnerCacheSize bounds the owners remembered as absent, as upstream's.
const absentOwnerCacheSize = 500

// absentOwners remembers owners the API server said do not exist, so that the dependents of
// a deleted owner cost one GET between them. A cluster-scoped owner is remembered without a
// namespace, a namespaced one with its dependent's.
type absentOwners struct{ cache *lru.Cache }

func newAbsentOwners() *absentOwners { return &absentOwners{cache: lru.New(absentOwnerCacheSize)} }

func (c *absentOwners) add(ref objectReference) { c.cache.Add(ref, nil) }

func (c *absentOwners) has(ref objectReference) bool {
	_, ok := c.cache.Get(ref)
	return ok
}
