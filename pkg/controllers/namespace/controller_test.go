package namespace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	leases     = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	bindings   = schema.GroupVersionResource{Version: "v1", Resource: "bindings"}

	allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

	// coreResources is what discovery says about the core group: pods and configmaps support
	// deletecollection, bindings cannot be deleted at all, pods/status is a subresource.
	coreResources = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: metav1.Verbs{"create"}},
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: allVerbs},
		{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: allVerbs},
		{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "patch", "update"}},
	}}
	// leaseResources lacks deletecollection, so leases are deleted one by one.
	leaseResources = &metav1.APIResourceList{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "leases", Namespaced: true, Kind: "Lease", Verbs: metav1.Verbs{"create", "delete", "get", "list", "update"}},
	}}
)

// fakeDiscovery answers ServerPreferredNamespacedResources with fixed lists and error.
type fakeDiscovery struct {
	*fakediscovery.FakeDiscovery
	lists []*metav1.APIResourceList
	err   error
}

func (d *fakeDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return d.lists, d.err
}

// fakeObject is a namespaced object in the fake metadata store. grace > 0 makes its deletion
// graceful, as a pod's is while its node agent stops it.
type fakeObject struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespace  string
	name       string
	finalizers []string
	grace      time.Duration
}

func (o fakeObject) metadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: o.gvr.GroupVersion().String(), Kind: o.kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: o.name, Finalizers: o.finalizers},
	}
}

func pod(ns, name string) fakeObject {
	return fakeObject{gvr: podsResource, kind: "Pod", namespace: ns, name: name}
}
func configMap(ns, name string) fakeObject {
	return fakeObject{gvr: configMaps, kind: "ConfigMap", namespace: ns, name: name}
}
func lease(ns, name string) fakeObject {
	return fakeObject{gvr: leases, kind: "Lease", namespace: ns, name: name}
}

// fakeAPI is an API server in miniature: namespaces in a fake clientset whose finalize
// subresource deletes a namespace once spec.finalizers is empty, and namespaced content in a
// fake metadata client whose deletions honour grace periods and finalizers.
type fakeAPI struct {
	client    *fake.Clientset
	metadata  *metadatafake.FakeMetadataClient
	discovery *fakeDiscovery
	grace     map[string]time.Duration // by namespace/name
}

func newFakeAPI(t *testing.T, namespaces []*corev1.Namespace, objects []fakeObject, lists []*metav1.APIResourceList, discoveryErr error) *fakeAPI {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var nsObjects []runtime.Object
	for _, ns := range namespaces {
		nsObjects = append(nsObjects, ns)
	}
	api := &fakeAPI{
		client:    fake.NewClientset(nsObjects...),
		metadata:  metadatafake.NewSimpleMetadataClient(scheme),
		discovery: &fakeDiscovery{lists: lists, err: discoveryErr},
		grace:     map[string]time.Duration{},
	}
	api.discovery.FakeDiscovery = &fakediscovery.FakeDiscovery{Fake: &api.client.Fake}
	for _, o := range objects {
		if err := api.metadata.Tracker().Add(o.metadata()); err != nil {
			t.Fatalf("adding %s: %v", o.name, err)
		}
		if o.grace > 0 {
			api.grace[o.namespace+"/"+o.name] = o.grace
		}
	}
	api.client.PrependReactor("create", "namespaces", api.finalize)
	api.metadata.PrependReactor("delete-collection", "*", api.deleteCollection)
	api.metadata.PrependReactor("delete", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		a := action.(clienttesting.DeleteAction)
		return true, nil, api.delete(a.GetResource(), a.GetNamespace(), a.GetName())
	})
	return api
}

func (api *fakeAPI) finalize(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "finalize" {
		return false, nil, nil
	}
	ns := action.(clienttesting.CreateAction).GetObject().(*corev1.Namespace)
	tracker := api.client.Tracker()
	nsResource := corev1.SchemeGroupVersion.WithResource("namespaces")
	if len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 {
		return true, ns, tracker.Delete(nsResource, "", ns.Name)
	}
	obj, err := tracker.Get(nsResource, "", ns.Name)
	if err != nil {
		return true, nil, err
	}
	current := obj.(*corev1.Namespace)
	current.Spec.Finalizers = ns.Spec.Finalizers
	return true, current, tracker.Update(nsResource, current, "")
}

func (api *fakeAPI) deleteCollection(action clienttesting.Action) (bool, runtime.Object, error) {
	gvr, ns := action.GetResource(), action.GetNamespace()
	list, err := api.metadata.Tracker().List(gvr, schema.GroupVersionKind{Group: "fake-metadata-client-group", Version: "v1"}, ns)
	if err != nil {
		return true, nil, err
	}
	for _, item := range list.(*metav1.List).Items {
		if err := api.delete(gvr, ns, item.Object.(*metav1.PartialObjectMetadata).Name); err != nil {
			return true, nil, err
		}
	}
	return true, nil, nil
}

// delete removes an object at once, or marks it deleted when a grace period or finalizers
// keep it around for now.
func (api *fakeAPI) delete(gvr schema.GroupVersionResource, ns, name string) error {
	tracker := api.metadata.Tracker()
	obj, err := tracker.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	item := obj.(*metav1.PartialObjectMetadata)
	grace := api.grace[ns+"/"+name]
	if grace == 0 && len(item.Finalizers) == 0 {
		return tracker.Delete(gvr, ns, name)
	}
	if item.DeletionTimestamp == nil {
		item.DeletionTimestamp = &metav1.Time{Time: now.Add(grace)}
	}
	return tracker.Update(gvr, item, ns)
}

// names lists the names of the objects of gvr left in the namespace.
func (api *fakeAPI) names(t *testing.T, gvr schema.GroupVersionResource, ns string) []string {
	t.Helper()
	list, err := api.metadata.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing %s: %v", gvr.Resource, err)
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	slices.Sort(names)
	return names
}

// metadataVerbs lists "verb resource" for each call made through the metadata client.
func (api *fakeAPI) metadataVerbs() []string {
	var verbs []string
	for _, a := range api.metadata.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return verbs
}

func (api *fakeAPI) finalizeCalls() int {
	n := 0
	for _, a := range api.client.Actions() {
		if a.GetSubresource() == "finalize" {
			n++
		}
	}
	return n
}

func newTestController(api *fakeAPI) *Controller {
	factory := informers.NewSharedInformerFactory(api.client, 0)
	c := NewController(api.client, api.metadata, api.discovery, factory.Core().V1().Namespaces())
	c.clock = clocktesting.NewFakePassiveClock(now)
	c.deletionGracePeriod = 0
	return c
}

func terminating(name string, finalizers ...corev1.FinalizerName) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &metav1.Time{Time: now.Add(-time.Second)}},
		Spec:       corev1.NamespaceSpec{Finalizers: finalizers},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
}

func active(name string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) corev1.NamespaceCondition {
	if i := conditionIndex(ns.Status.Conditions, t); i >= 0 {
		return ns.Status.Conditions[i]
	}
	return corev1.NamespaceCondition{}
}

func TestSyncNamespace(t *testing.T) {
	held := configMap("doomed", "held")
	held.finalizers = []string{"example.com/hold"}
	stopping := pod("doomed", "stopping")
	stopping.grace = 30 * time.Second
	discoveryFailed := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
	}}
	kubernetesFinalizer := []corev1.FinalizerName{corev1.FinalizerKubernetes}

	tests := []struct {
		name         string
		namespace    *corev1.Namespace
		objects      []fakeObject
		lists        []*metav1.APIResourceList
		discoveryErr error
		deleteErr    error // returned by deletecollection of configmaps

		wantRemaining     bool   // a contentRemainingError
		wantErr           string // another error containing this
		wantGone          bool   // the namespace was finalized and deleted
		wantFinalizeCalls int
		wantFinalizers    []corev1.FinalizerName
		wantLeft          map[schema.GroupVersionResource][]string // objects left in "doomed"
		wantCondition     *corev1.NamespaceCondition               // Type, Status, Reason, Message compared
		wantNoCalls       bool                                     // content was not touched
	}{{
		name:      "content deleted, then finalizer removed",
		namespace: terminating("doomed", kubernetesFinalizer...),
		objects: []fakeObject{pod("doomed", "a"), configMap("doomed", "b"), lease("doomed", "c"),
			configMap("kept", "other-namespace")},
		lists:             []*metav1.APIResourceList{coreResources, leaseResources},
		wantGone:          true,
		wantFinalizeCalls: 1,
		wantLeft:          map[schema.GroupVersionResource][]string{podsResource: nil, configMaps: nil, leases: nil},
	}, {
		name:      "pod waiting for its node agent: condition set, other content kept, no finalize",
		namespace: terminating("doomed", kubernetesFinalizer...),
		objects:   []fakeObject{stopping, configMap("doomed", "b")},
		lists:     []*metav1.APIResourceList{coreResources, leaseResources},

		wantRemaining:  true,
		wantFinalizers: kubernetesFinalizer,
		wantLeft:       map[schema.GroupVersionResource][]string{podsResource: {"stopping"}, configMaps: {"b"}},
		wantCondition: &corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue,
			Reason: "SomeResourcesRemain", Message: "Some resources are remaining: pods. has 1 resource instances"},
	}, {
		name:      "object held by a finalizer",
		namespace: terminating("doomed", kubernetesFinalizer...),
		objects:   []fakeObject{held},
		lists:     []*metav1.APIResourceList{coreResources},

		wantRemaining:  true,
		wantFinalizers: kubernetesFinalizer,
		wantLeft:       map[schema.GroupVersionResource][]string{configMaps: {"held"}},
		wantCondition: &corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue,
			Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"},
	}, {
		name:         "partial discovery failure: discovered content deleted, no finalize",
		namespace:    terminating("doomed", kubernetesFinalizer...),
		objects:      []fakeObject{pod("doomed", "a"), configMap("doomed", "b")},
		lists:        []*metav1.APIResourceList{coreResources},
		discoveryErr: discoveryFailed,

		wantErr:        "discovering namespaced resources",
		wantFinalizers: kubernetesFinalizer,
		wantLeft:       map[schema.GroupVersionResource][]string{podsResource: nil, configMaps: nil},
		wantCondition: &corev1.NamespaceCondition{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionTrue,
			Reason: "DiscoveryFailed", Message: "Discovery failed for some groups, 1 failing: " + discoveryFailed.Error()},
	}, {
		name:      "group version that does not parse: the rest is deleted, no finalize",
		namespace: terminating("doomed", kubernetesFinalizer...),
		objects:   []fakeObject{configMap("doomed", "b")},
		lists:     []*metav1.APIResourceList{{GroupVersion: "a/b/c"}, coreResources},

		wantErr:        "parsing discovered group versions",
		wantFinalizers: kubernetesFinalizer,
		wantLeft:       map[schema.GroupVersionResource][]string{configMaps: nil},
		wantCondition: &corev1.NamespaceCondition{Type: corev1.NamespaceDeletionGVParsingFailure, Status: corev1.ConditionTrue,
			Reason: "GroupVersionParsingFailed", Message: "unexpected GroupVersion string: a/b/c"},
	}, {
		name:      "deletion fails",
		namespace: terminating("doomed", kubernetesFinalizer...),
		objects:   []fakeObject{configMap("doomed", "b")},
		lists:     []*metav1.APIResourceList{coreResources},
		deleteErr: apierrors.NewInternalError(errors.New("etcd is sad")),

		wantErr:        "etcd is sad",
		wantFinalizers: kubernetesFinalizer,
		wantLeft:       map[schema.GroupVersionResource][]string{configMaps: {"b"}},
		wantCondition: &corev1.NamespaceCondition{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue,
			Reason: "ContentDeletionFailed", Message: "Failed to delete all resource types, 1 remaining: deleting all configmaps in namespace doomed: Internal error occurred: etcd is sad"},
	}, {
		name:      "another finalizer stays",
		namespace: terminating("doomed", corev1.FinalizerKubernetes, "example.com/x"),
		objects:   []fakeObject{configMap("doomed", "b")},
		lists:     []*metav1.APIResourceList{coreResources},

		wantFinalizers:    []corev1.FinalizerName{"example.com/x"},
		wantFinalizeCalls: 1,
		wantLeft:          map[schema.GroupVersionResource][]string{configMaps: nil},
	}, {
		name:      "namespace not being deleted",
		namespace: active("doomed"),
		objects:   []fakeObject{configMap("doomed", "b")},
		lists:     []*metav1.APIResourceList{coreResources},

		wantFinalizers: kubernetesFinalizer,
		wantNoCalls:    true,
	}, {
		name:      "finalized by this controller, other finalizers left: content is still deleted",
		namespace: terminating("doomed", "example.com/x"),
		objects:   []fakeObject{configMap("doomed", "b")},
		lists:     []*metav1.APIResourceList{coreResources},

		wantFinalizers: []corev1.FinalizerName{"example.com/x"},
		wantLeft:       map[schema.GroupVersionResource][]string{configMaps: nil},
	}, {
		name:      "no finalizers left: nothing to do",
		namespace: terminating("doomed"),
		objects:   []fakeObject{configMap("doomed", "b")},
		lists:     []*metav1.APIResourceList{coreResources},

		wantNoCalls: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, []*corev1.Namespace{tt.namespace}, tt.objects, tt.lists, tt.discoveryErr)
			if tt.deleteErr != nil {
				api.metadata.PrependReactor("delete-collection", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.deleteErr
				})
			}
			c := newTestController(api)
			defer c.queue.ShutDown()

			err := c.syncNamespace(context.Background(), "doomed")

			if tt.wantNoCalls && len(api.metadata.Actions()) > 0 {
				t.Errorf("metadata calls %v, want none", api.metadataVerbs())
			}
			var remaining *contentRemainingError
			switch {
			case tt.wantRemaining:
				if !errors.As(err, &remaining) {
					t.Fatalf("syncNamespace() = %v, want content remaining", err)
				}
			case tt.wantErr != "":
				if err == nil || errors.As(err, &remaining) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("syncNamespace() = %v, want an error containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("syncNamespace() = %v", err)
			}

			ns, err := api.client.CoreV1().Namespaces().Get(context.Background(), "doomed", metav1.GetOptions{})
			switch {
			case tt.wantGone:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("namespace still there (%v), want it finalized and deleted", err)
				}
			case err != nil:
				t.Fatalf("getting namespace: %v", err)
			case !slices.Equal(ns.Spec.Finalizers, tt.wantFinalizers):
				t.Errorf("spec.finalizers = %v, want %v", ns.Spec.Finalizers, tt.wantFinalizers)
			}
			if got := api.finalizeCalls(); got != tt.wantFinalizeCalls {
				t.Errorf("finalize calls = %d, want %d", got, tt.wantFinalizeCalls)
			}

			for gvr, want := range tt.wantLeft {
				if got := api.names(t, gvr, "doomed"); !slices.Equal(got, want) {
					t.Errorf("%s left = %v, want %v", gvr.Resource, got, want)
				}
			}
			if got := api.names(t, configMaps, "kept"); len(tt.objects) > 3 && !slices.Equal(got, []string{"other-namespace"}) {
				t.Errorf("configmaps in another namespace = %v, want them untouched", got)
			}
			for _, verb := range api.metadataVerbs() {
				if verb == "delete-collection leases" || verb == "delete-collection bindings" || verb == "delete bindings" {
					t.Errorf("call %q on a resource that does not support it", verb)
				}
			}

			if tt.wantCondition != nil {
				got := condition(ns, tt.wantCondition.Type)
				got.LastTransitionTime = metav1.Time{}
				if got != *tt.wantCondition {
					t.Errorf("condition %s = %+v, want %+v", tt.wantCondition.Type, got, *tt.wantCondition)
				}
			}
		})
	}
}

// TestSyncNamespaceDeletesLeasesOneByOne checks the fallback for a resource without
// deletecollection: list, then delete each object.
func TestSyncNamespaceDeletesLeasesOneByOne(t *testing.T) {
	api := newFakeAPI(t, []*corev1.Namespace{terminating("doomed", corev1.FinalizerKubernetes)},
		[]fakeObject{lease("doomed", "a"), lease("doomed", "b")}, []*metav1.APIResourceList{leaseResources}, nil)
	c := newTestController(api)
	defer c.queue.ShutDown()

	if err := c.syncNamespace(context.Background(), "doomed"); err != nil {
		t.Fatalf("syncNamespace() = %v", err)
	}
	want := []string{"list leases", "delete leases", "delete leases", "list leases"}
	if got := api.metadataVerbs(); !slices.Equal(got, want) {
		t.Errorf("metadata calls = %v, want %v", got, want)
	}
}

// TestSyncNamespaceFinishesWhenContentIsGone follows a namespace over two passes: first a pod
// is stopping, then its node agent is done and the namespace goes.
func TestSyncNamespaceFinishesWhenContentIsGone(t *testing.T) {
	stopping := pod("doomed", "stopping")
	stopping.grace = 30 * time.Second
	api := newFakeAPI(t, []*corev1.Namespace{terminating("doomed", corev1.FinalizerKubernetes)},
		[]fakeObject{stopping, configMap("doomed", "b")}, []*metav1.APIResourceList{coreResources}, nil)
	c := newTestController(api)
	defer c.queue.ShutDown()
	ctx := context.Background()

	var remaining *contentRemainingError
	if err := c.syncNamespace(ctx, "doomed"); !errors.As(err, &remaining) {
		t.Fatalf("first pass = %v, want content remaining", err)
	}
	if got, want := remaining.requeueAfter(), maxContentWait; got != want {
		t.Errorf("requeueAfter() = %v, want %v", got, want)
	}

	// The node agent has stopped the pod and deleted it.
	if err := api.metadata.Tracker().Delete(podsResource, "doomed", "stopping"); err != nil {
		t.Fatal(err)
	}
	if err := c.syncNamespace(ctx, "doomed"); err != nil {
		t.Fatalf("second pass = %v", err)
	}
	if _, err := api.client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace still there (%v), want it finalized and deleted", err)
	}
}

// TestRun drives the controller through its informer: a namespace marked for deletion is
// emptied and finalized, and Run returns once its context ends.
func TestRun(t *testing.T) {
	api := newFakeAPI(t, nil, []fakeObject{configMap("doomed", "b")}, []*metav1.APIResourceList{coreResources}, nil)
	factory := informers.NewSharedInformerFactory(api.client, 0)
	c := NewController(api.client, api.metadata, api.discovery, factory.Core().V1().Namespaces())
	c.deletionGracePeriod = 0

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, 2)
	}()

	if _, err := api.client.CoreV1().Namespaces().Create(ctx, terminating("doomed", corev1.FinalizerKubernetes), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := api.client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace was not finalized: %v", err)
	}
	if got := api.names(t, configMaps, "doomed"); len(got) != 0 {
		t.Errorf("configmaps left = %v", got)
	}

	cancel()
	factory.Shutdown()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
