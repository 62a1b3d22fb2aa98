package garbagecollector

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// Kinds the tests use, with their scope.
var (
	configMaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	pods         = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodes        = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	coreEvents   = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	testKinds    = map[string]schema.GroupVersionResource{"ConfigMap": configMaps, "Secret": secrets, "Pod": pods, "Node": nodes, "Event": coreEvents}
	clusterKinds = map[string]bool{"Node": true}
)

// resettableMapper is a fixed REST mapper counting its resets.
type resettableMapper struct {
	meta.RESTMapper
	resets int
}

func (m *resettableMapper) Reset() { m.resets++ }

func newMapper() *resettableMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for kind, gvr := range testKinds {
		scope := meta.RESTScopeNamespace
		if clusterKinds[kind] {
			scope = meta.RESTScopeRoot
		}
		m.AddSpecific(gvr.GroupVersion().WithKind(kind), gvr, gvr.GroupVersion().WithResource(strings.TrimSuffix(gvr.Resource, "s")), scope)
	}
	return &resettableMapper{RESTMapper: m}
}

// object builds the metadata of a test object: object("ConfigMap", "ns", "name", "uid").
type object struct{ *metav1.PartialObjectMetadata }

func newObject(kind, namespace, name, uid string) object {
	return object{&metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid), ResourceVersion: "1"},
	}}
}

// ownedBy adds a reference to o's owner; blocking sets blockOwnerDeletion.
func (o object) ownedBy(owner object, blocking bool) object {
	o.OwnerReferences = append(o.OwnerReferences, metav1.OwnerReference{
		APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID,
		BlockOwnerDeletion: ptr.To(blocking),
	})
	return o
}

// deleting marks o being deleted with finalizers.
func (o object) deleting(finalizers ...string) object {
	o.DeletionTimestamp = ptr.To(metav1.Now())
	o.Finalizers = finalizers
	return o
}

// fixture is a collector on a fake metadata client, driven step by step by the test.
type fixture struct {
	t         *testing.T
	ctx       context.Context
	client    *metadatafake.FakeMetadataClient
	gc        *GarbageCollector
	recorder  *events.FakeRecorder
	discovery *discoveryStub
}

func newFixture(t *testing.T, objects ...object) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, o.PartialObjectMetadata.DeepCopy())
	}
	scheme := metadatafake.NewTestScheme()
	for kind, gvr := range testKinds {
		scheme.AddKnownTypeWithName(gvr.GroupVersion().WithKind(kind), &metav1.PartialObjectMetadata{})
		scheme.AddKnownTypeWithName(gvr.GroupVersion().WithKind(kind+"List"), &metav1.PartialObjectMetadataList{})
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	disco := &discoveryStub{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}}
	gc, err := NewGarbageCollector(client, newMapper(), disco, nil)
	if err != nil {
		t.Fatal(err)
	}
	recorder := events.NewFakeRecorder(100)
	gc.Recorder = recorder
	gc.graph.recorder = recorder
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(5)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	t.Cleanup(cancel)
	return &fixture{t: t, ctx: ctx, client: client, gc: gc, recorder: recorder, discovery: disco}
}

// discoveryStub reports set resources as the server's preferred ones (the fake reports none).
type discoveryStub struct {
	*fakediscovery.FakeDiscovery
	mu    sync.Mutex
	lists []*metav1.APIResourceList
	err   error
}

func (d *discoveryStub) set(lists []*metav1.APIResourceList, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lists, d.err = lists, err
}

func (d *discoveryStub) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lists, d.err
}

// waitFor fails the test unless cond holds within 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// observe feeds the graph builder the informer's add of each object.
func (f *fixture) observe(objects ...object) {
	for _, o := range objects {
		f.gc.graph.processGraphChange(klog.FromContext(f.ctx), &event{eventType: addEvent, obj: o.DeepCopy(), gvk: o.GroupVersionKind()})
	}
}

func (f *fixture) update(old, cur object) {
	f.gc.graph.processGraphChange(klog.FromContext(f.ctx), &event{eventType: updateEvent, obj: cur.DeepCopy(), oldObj: old.DeepCopy(), gvk: cur.GroupVersionKind()})
}

func (f *fixture) deleted(o object) {
	f.gc.graph.processGraphChange(klog.FromContext(f.ctx), &event{eventType: deleteEvent, obj: o.DeepCopy(), gvk: o.GroupVersionKind()})
}

// drain processes graph changes and both queues until all are empty, returning the sync
// errors by item name. Items requeued with back-off are not waited for.
func (f *fixture) drain() map[string]error {
	f.t.Helper()
	errs := map[string]error{}
	logger := klog.FromContext(f.ctx)
	for range 1000 {
		switch {
		case f.gc.graph.changes.Len() > 0:
			ev, _ := f.gc.graph.changes.Get()
			f.gc.graph.processGraphChange(logger, ev)
			f.gc.graph.changes.Done(ev)
		case f.gc.attemptToDelete.Len() > 0:
			n, _ := f.gc.attemptToDelete.Get()
			if err := f.gc.syncAttemptToDelete(f.ctx, n); err != nil {
				errs[n.identity.Name] = err
			}
			f.gc.attemptToDelete.Done(n)
		case f.gc.attemptToOrphan.Len() > 0:
			n, _ := f.gc.attemptToOrphan.Get()
			if err := f.gc.syncAttemptToOrphan(f.ctx, n); err != nil {
				errs[n.identity.Name] = err
			}
			f.gc.attemptToOrphan.Done(n)
		default:
			return errs
		}
	}
	f.t.Fatal("the queues did not drain")
	return nil
}

// writes are the client's deletes and patches, as "delete configmaps ns/name uid=U policy=P"
// and "patch configmaps ns/name TYPE DATA".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a := a.(type) {
		case clienttesting.DeleteActionImpl:
			opts := a.DeleteOptions
			uid, policy := "", ""
			if opts.Preconditions != nil && opts.Preconditions.UID != nil {
				uid = string(*opts.Preconditions.UID)
			}
			if opts.PropagationPolicy != nil {
				policy = string(*opts.PropagationPolicy)
			}
			out = append(out, "delete "+a.Resource.Resource+" "+key(a.Namespace, a.Name)+" uid="+uid+" policy="+policy)
		case clienttesting.PatchActionImpl:
			out = append(out, "patch "+a.Resource.Resource+" "+key(a.Namespace, a.Name)+" "+string(a.PatchType)+" "+string(a.Patch))
		}
	}
	return out
}

// gets counts the client's GETs of name.
func (f *fixture) gets(name string) int {
	n := 0
	for _, a := range f.client.Actions() {
		if g, ok := a.(clienttesting.GetActionImpl); ok && g.Name == name {
			n++
		}
	}
	return n
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// stored is the fake's object of resource, or nil.
func (f *fixture) stored(resource schema.GroupVersionResource, namespace, name string) *metav1.PartialObjectMetadata {
	obj, err := f.client.Resource(resource).Namespace(namespace).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return obj
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		case <-time.After(10 * time.Millisecond):
			return out
		}
	}
}

func (f *fixture) node(uid string) *node {
	n, _ := f.gc.graph.nodes.read(types.UID(uid))
	return n
}

func dependentNames(n *node) []string {
	var names []string
	for _, d := range n.getDependents() {
		names = append(names, d.identity.Name)
	}
	slices.Sort(names)
	return names
}
