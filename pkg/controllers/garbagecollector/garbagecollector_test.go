package garbagecollector

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

func TestGraphEdgesFollowOwnerReferences(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1")
	other := newObject("Secret", "ns", "other", "o2")
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(owner, false)
	f := newFixture(t, owner, other, dep)
	f.observe(owner, other, dep)

	if got := dependentNames(f.node("o1")); !slices.Equal(got, []string{"dep"}) {
		t.Fatalf("owner's dependents = %v, want [dep]", got)
	}
	// The dependent changes owners: the edge moves.
	moved := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(other, true)
	f.update(dep, moved)
	if got := dependentNames(f.node("o1")); len(got) != 0 {
		t.Errorf("old owner's dependents = %v, want none", got)
	}
	if got := dependentNames(f.node("o2")); !slices.Equal(got, []string{"dep"}) {
		t.Errorf("new owner's dependents = %v, want [dep]", got)
	}
	if got := f.node("d1").getOwners(); len(got) != 1 || got[0].UID != "o2" {
		t.Errorf("dependent's owners = %v, want o2 only", got)
	}
	// The dependent goes: it leaves the graph and its owner's dependents.
	f.deleted(moved)
	if f.gc.GraphHasUID("d1") {
		t.Error("deleted dependent still in the graph")
	}
	if got := dependentNames(f.node("o2")); len(got) != 0 {
		t.Errorf("owner's dependents after the dependent's deletion = %v, want none", got)
	}
	// Nothing here is collectable: both owners exist and have no owners.
	f.drain()
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %q, want none", w)
	}
}

func TestDependentOfAnAbsentOwnerIsDeleted(t *testing.T) {
	gone := newObject("ConfigMap", "ns", "gone", "o1")
	dep1 := newObject("ConfigMap", "ns", "dep1", "d1").ownedBy(gone, false)
	dep2 := newObject("Pod", "ns", "dep2", "d2").ownedBy(gone, false)
	f := newFixture(t, dep1, dep2) // the owner is not stored
	f.observe(dep1, dep2)

	owner := f.node("o1")
	if owner == nil || owner.isObserved() {
		t.Fatalf("owner node = %v, want a virtual node", owner)
	}
	if errs := f.drain(); len(errs) != 0 {
		t.Fatalf("sync errors: %v", errs)
	}
	want := []string{
		"delete configmaps ns/dep1 uid=d1 policy=Background",
		"delete pods ns/dep2 uid=d2 policy=Background",
	}
	got := f.writes()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
	if f.gc.GraphHasUID("o1") {
		t.Error("the virtual owner is still in the graph after its virtual delete")
	}
	// The owner's absence is verified by one GET of its name; the second
	// dependent's check comes from the absent-owner cache.
	if n := f.gets("gone"); n != 1 {
		t.Errorf("the absent owner was fetched %d times, want 1", n)
	}
}

func TestDependentWithALiveOwnerStays(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1")
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(owner, false)
	f := newFixture(t, owner, dep)
	// The dependent is seen first: the owner is virtual until its own event.
	f.observe(dep)
	f.drain()
	f.observe(owner)
	f.drain()
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %q, want none", w)
	}
	if n := f.node("o1"); n == nil || !n.isObserved() {
		t.Errorf("owner node = %v, want observed", n)
	}
}

func TestOwnerReplacedUnderTheSameNameDoesNotKeepTheDependent(t *testing.T) {
	old := newObject("ConfigMap", "ns", "owner", "old-uid")
	successor := newObject("ConfigMap", "ns", "owner", "new-uid")
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(old, false)
	f := newFixture(t, successor, dep)
	f.observe(successor, dep)
	f.drain()
	if got := f.writes(); !slices.Equal(got, []string{"delete configmaps ns/dep uid=d1 policy=Background"}) {
		t.Errorf("writes = %q, want the dependent deleted (its owner's UID is gone)", got)
	}
}

func TestDanglingReferenceIsRemovedWhileAnotherOwnerLives(t *testing.T) {
	live := newObject("ConfigMap", "ns", "live", "o1")
	gone := newObject("Secret", "ns", "gone", "o2")
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(live, false).ownedBy(gone, false)
	f := newFixture(t, live, dep)
	f.observe(live, dep)
	f.drain()
	want := []string{`patch configmaps ns/dep application/strategic-merge-patch+json {"metadata":{"ownerReferences":[{"$patch":"delete","uid":"o2"}],"uid":"d1"}}`}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
	if got := f.stored(configMaps, "ns", "dep"); got == nil || len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "o1" {
		t.Errorf("stored dependent = %v, want only the live owner's reference", got)
	}
}

func TestForegroundDeletion(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1").deleting(metav1.FinalizerDeleteDependents)
	blocking := newObject("Pod", "ns", "blocking", "d1").ownedBy(owner, true)
	nonBlocking := newObject("ConfigMap", "ns", "loose", "d2").ownedBy(owner, false)
	f := newFixture(t, owner, blocking, nonBlocking)
	f.observe(blocking, nonBlocking, owner)

	if !f.node("o1").isDeletingDependents() {
		t.Fatal("the owner is not marked deletingDependents")
	}
	f.drain()
	got := f.writes()
	slices.Sort(got)
	// Both dependents go: their owner waits for them and they have no dependents, so they
	// are deleted by the default policy; the owner keeps its finalizer while the blocking
	// dependent exists in the graph.
	want := []string{
		"delete configmaps ns/loose uid=d2 policy=Background",
		"delete pods ns/blocking uid=d1 policy=Background",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("writes = %q, want %q", got, want)
	}
	if o := f.stored(configMaps, "ns", "owner"); o == nil || !slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner = %v, want it kept with its finalizer while a blocking dependent exists", o)
	}
	// The informer reports the blocking dependent gone: the owner is finalized.
	f.client.ClearActions()
	f.deleted(blocking)
	f.drain()
	if got := f.writes(); len(got) != 1 || !strings.HasPrefix(got[0], `patch configmaps ns/owner application/merge-patch+json {"metadata":{"resourceVersion":"1","finalizers":null}}`) {
		t.Errorf("writes = %q, want the foregroundDeletion finalizer removed", got)
	}
}

func TestForegroundDeletionOfAnOwnerWhoseDependentHasDependents(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1").deleting(metav1.FinalizerDeleteDependents)
	middle := newObject("ConfigMap", "ns", "middle", "m1").ownedBy(owner, true)
	leaf := newObject("Pod", "ns", "leaf", "l1").ownedBy(middle, true)
	f := newFixture(t, owner, middle, leaf)
	f.observe(owner, middle, leaf)
	f.drain()
	// The middle object has dependents: it goes in the foreground too, so that the owner
	// stays until the leaf is gone.
	if got := f.writes(); !slices.Equal(got, []string{"delete configmaps ns/middle uid=m1 policy=Foreground"}) {
		t.Errorf("writes = %q, want the middle object deleted in the foreground", got)
	}
}

func TestOrphanDeletion(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1").deleting(metav1.FinalizerOrphanDependents)
	other := newObject("Secret", "ns", "other", "o2")
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(owner, true).ownedBy(other, false)
	f := newFixture(t, owner, other, dep)
	f.observe(other, dep)
	before := newObject("ConfigMap", "ns", "owner", "o1")
	f.observe(before)
	f.update(before, owner) // the deletion starts with the orphan finalizer
	if f.gc.attemptToOrphan.Len() != 1 {
		t.Fatalf("attemptToOrphan holds %d items, want the owner", f.gc.attemptToOrphan.Len())
	}
	if errs := f.drain(); len(errs) != 0 {
		t.Fatalf("sync errors: %v", errs)
	}
	want := []string{
		`patch configmaps ns/dep application/strategic-merge-patch+json {"metadata":{"ownerReferences":[{"$patch":"delete","uid":"o1"}],"uid":"d1"}}`,
		`patch configmaps ns/owner application/merge-patch+json {"metadata":{"resourceVersion":"1","finalizers":null}}`,
	}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
	if d := f.stored(configMaps, "ns", "dep"); d == nil || len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != "o2" {
		t.Errorf("dependent = %v, want it kept with only the other owner's reference", d)
	}
}

func TestCycleInForegroundDeletionIsBroken(t *testing.T) {
	a := newObject("ConfigMap", "ns", "a", "a1")
	b := newObject("ConfigMap", "ns", "b", "b1").ownedBy(a, true)
	a = a.ownedBy(b, true)
	aDeleting := a
	aDeleting.PartialObjectMetadata = a.DeepCopy()
	aDeleting = aDeleting.deleting(metav1.FinalizerDeleteDependents)
	f := newFixture(t, a, b)
	f.observe(a, b)
	f.drain()
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("a cycle of live owners: writes = %q, want none", w)
	}
	if err := f.client.Tracker().Update(configMaps, aDeleting.DeepCopy(), "ns"); err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions()
	// The API server keeps an object deleted in the foreground until its dependents are gone.
	f.client.PrependReactor("delete", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		opts := a.(clienttesting.DeleteActionImpl).DeleteOptions
		return opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationForeground, nil, nil
	})
	f.update(a, aDeleting)
	f.drain()
	// b waits for a (foreground) and a is its dependent, itself deleting its dependents: b's
	// references are made non-blocking and b is deleted in the foreground (twice here: queued
	// by a's deletion and again by a, which b still blocks in the graph; both are idempotent).
	want := []string{
		`patch configmaps ns/b application/strategic-merge-patch+json {"metadata":{"uid":"b1","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"a1","blockOwnerDeletion":false}]}}`,
		"delete configmaps ns/b uid=b1 policy=Foreground",
	}
	if got := f.writes(); len(got) < 2 || !slices.Equal(got[:2], want) || len(got)%2 != 0 || !slices.Equal(got[len(got)-2:], want) {
		t.Errorf("writes = %q, want %q (repeated)", got, want)
	}
	// The graph sees b being deleted with its reference unblocked: a has no blocking
	// dependent left and is finalized.
	f.client.ClearActions()
	bDeleting := newObject("ConfigMap", "ns", "b", "b1").ownedBy(newObject("ConfigMap", "ns", "a", "a1"), false).deleting(metav1.FinalizerDeleteDependents)
	f.update(b, bDeleting)
	f.drain()
	want = []string{`patch configmaps ns/a application/merge-patch+json {"metadata":{"resourceVersion":"1","finalizers":null}}`}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
}

func TestOwnerInAnotherNamespaceIsNoOwner(t *testing.T) {
	owner := newObject("ConfigMap", "a", "owner", "o1")
	dep := newObject("ConfigMap", "b", "dep", "d1").ownedBy(owner, false)
	f := newFixture(t, owner, dep)
	f.observe(owner, dep)
	events := f.events()
	wantEvent := `Warning OwnerRefInvalidNamespace ownerRef [v1/ConfigMap, namespace: b, name: owner, uid: o1] does not exist in namespace "b"`
	if !slices.Equal(events, []string{wantEvent}) {
		t.Errorf("events = %q, want %q", events, wantEvent)
	}
	f.drain()
	// The owner is looked for in the dependent's namespace, not found, so the dependent goes.
	if got := f.writes(); !slices.Equal(got, []string{"delete configmaps b/dep uid=d1 policy=Background"}) {
		t.Errorf("writes = %q, want the dependent deleted", got)
	}
}

func TestClusterScopedDependentOfANamespacedOwnerIsLeftAlone(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1")
	dep := newObject("Node", "", "node", "n1").ownedBy(owner, false)
	f := newFixture(t, owner, dep)
	f.observe(dep)
	if errs := f.drain(); len(errs) != 0 {
		t.Errorf("sync errors: %v, want none (the error is final, not retried)", errs)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %q, want none", w)
	}
}

func TestMalformedOwnerReferenceDoesNotStopTheCollector(t *testing.T) {
	gone := newObject("ConfigMap", "ns", "gone", "o1")
	bad := newObject("ConfigMap", "ns", "bad", "b1")
	bad.OwnerReferences = []metav1.OwnerReference{{APIVersion: "not/a/version", Kind: "Nothing", Name: "x", UID: "x1"}}
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(gone, false)
	f := newFixture(t, bad, dep)
	f.observe(bad, dep)
	errs := f.drain()
	// The unmappable owner is retried as routine (the next discovery may know the kind)...
	err := errs["x"]
	if _, routine := expectedDeleteFailure(err); err == nil || !routine {
		t.Errorf("the malformed owner's sync: %v, want a routine REST mapping error", err)
	}
	// ... and the other dependent is collected all the same.
	if got := f.writes(); !slices.Equal(got, []string{"delete configmaps ns/dep uid=d1 policy=Background"}) {
		t.Errorf("writes = %q, want the other dependent deleted", got)
	}
}

func TestAPanickingGraphChangeIsDroppedAndTheNextApplied(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1")
	f := newFixture(t)
	f.gc.graph.changes.Add(&event{eventType: addEvent, obj: nil}) // GetUID on nil panics
	f.gc.graph.changes.Add(&event{eventType: addEvent, obj: owner.DeepCopy(), gvk: owner.GroupVersionKind()})
	// A shut-down queue still hands out what it holds: run applies both, then returns.
	f.gc.graph.changes.ShutDown()
	f.gc.graph.run(f.ctx)
	if !f.gc.GraphHasUID("o1") {
		t.Error("the change after the panicking one was not applied")
	}
}

func TestSyncAttemptToDeleteRetriesAVirtualNodeUntilObserved(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1")
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(owner, false)
	f := newFixture(t, owner, dep)
	f.observe(dep)
	n, _ := f.gc.attemptToDelete.Get()
	if n.identity.UID != "o1" {
		t.Fatalf("queued %v, want the virtual owner", n.identity)
	}
	err := f.gc.syncAttemptToDelete(f.ctx, n)
	if !errors.Is(err, errNotObserved) {
		t.Fatalf("sync of an existing but unobserved owner: %v, want errNotObserved", err)
	}
	f.gc.attemptToDelete.Done(n)
	f.observe(owner)
	if err := f.gc.syncAttemptToDelete(f.ctx, n); err != nil {
		t.Errorf("sync once observed: %v, want nil (skipped)", err)
	}
}

func TestRunCollectsWithRealMonitors(t *testing.T) {
	gone := newObject("ConfigMap", "ns", "gone", "o1")
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(gone, false)
	f := newFixture(t, dep)
	ctx, cancel := context.WithCancel(f.ctx)
	f.discovery.set([]*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"delete", "list", "watch", "get"}},
		{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"delete", "list", "watch"}},
		{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
	}}}, nil)
	done := make(chan error, 1)
	go func() { done <- f.gc.Run(ctx, 2) }()
	waitFor(t, "the dependent deleted", func() bool { return f.stored(configMaps, "ns", "dep") == nil })
	if got := f.gc.monitors.resources(); len(got) != 1 || got[0] != configMaps {
		t.Errorf("monitored %v, want configmaps only (events ignored, bindings not deletable)", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}

func TestResourcesWithoutStrategicMergePatchGetAJSONMergePatch(t *testing.T) {
	owner := newObject("ConfigMap", "ns", "owner", "o1").deleting(metav1.FinalizerOrphanDependents)
	dep := newObject("ConfigMap", "ns", "dep", "d1").ownedBy(owner, true)
	f := newFixture(t, owner, dep)
	// As the API server answers for custom resources.
	f.client.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.PatchActionImpl).PatchType == types.StrategicMergePatchType {
			return true, nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", configMaps.GroupResource(), "dep", "no strategic merge patch", 0, false)
		}
		return false, nil, nil
	})
	f.observe(dep, owner)
	if errs := f.drain(); len(errs) != 0 {
		t.Fatalf("sync errors: %v", errs)
	}
	want := `patch configmaps ns/dep application/merge-patch+json {"metadata":{"resourceVersion":"1","ownerReferences":null}}`
	if got := f.writes(); !slices.Contains(got, want) {
		t.Errorf("writes = %q, want %q among them", got, want)
	}
	if d := f.stored(configMaps, "ns", "dep"); d == nil || len(d.OwnerReferences) != 0 {
		t.Errorf("dependent = %v, want it without owner references", d)
	}
}
