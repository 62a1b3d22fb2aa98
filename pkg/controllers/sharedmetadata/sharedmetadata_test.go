package sharedmetadata

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func newClient() *metadatafake.FakeMetadataClient {
	scheme := metadatafake.NewTestScheme()
	scheme.AddKnownTypeWithName(widgets.GroupVersion().WithKind("Widget"), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(widgets.GroupVersion().WithKind("WidgetList"), &metav1.PartialObjectMetadataList{})
	return metadatafake.NewSimpleMetadataClient(scheme, &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Labels: map[string]string{"a": "b"}},
	})
}

// watches counts the watches opened on widgets.
func watches(client *metadatafake.FakeMetadataClient) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" && a.GetResource() == widgets {
			n++
		}
	}
	return n
}

// TestHoldersShareOneInformerUntilTheLastReleases: two holders get one informer and one
// watch; it runs until both have released it, and a later Acquire starts a new one.
func TestHoldersShareOneInformerUntilTheLastReleases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := newClient()
	s := New(client)
	defer s.Shutdown()

	gc, quota := s.Acquire(ctx, widgets), s.Acquire(ctx, widgets)
	if gc.Informer != quota.Informer {
		t.Fatal("two holders of one resource got two informers")
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return gc.Informer.HasSynced() && watches(client) > 0, nil
	}); err != nil {
		t.Fatalf("the informer did not sync: %v", err)
	}
	if n := watches(client); n != 1 {
		t.Errorf("%d watches of widgets, want 1", n)
	}
	// The cache is indexed by namespace and keeps no labels.
	objs, err := gc.Informer.GetIndexer().ByIndex("namespace", "ns")
	if err != nil || len(objs) != 1 {
		t.Fatalf("objects of namespace ns: %v, %v; want the widget", objs, err)
	}
	if m := objs[0].(*metav1.PartialObjectMetadata); m.Labels != nil {
		t.Errorf("cached labels %v, want them trimmed", m.Labels)
	}

	gc.Release()
	gc.Release() // a second release is a no-op, not the other holder's
	if gc.Informer.IsStopped() {
		t.Fatal("the informer stopped while another holder had it")
	}
	quota.Release()
	if !quota.Informer.IsStopped() {
		t.Error("the informer runs after its last holder released it")
	}
	again := s.Acquire(ctx, widgets)
	defer again.Release()
	if again.Informer == gc.Informer {
		t.Error("Acquire after the last release handed out the stopped informer")
	}
}

// TestListFailingAndShutdown: a resource that cannot be listed is reported so; Shutdown
// stops what is held.
func TestListFailingAndShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := newClient()
	client.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden for the test")
	})
	s := New(client)
	h := s.Acquire(ctx, widgets)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return h.ListFailing(), nil
	}); err != nil {
		t.Fatalf("a failing list was not reported: %v", err)
	}
	s.Shutdown()
	if !h.Informer.IsStopped() {
		t.Error("Shutdown left a held informer running")
	}
	h.Release()
	late := s.Acquire(ctx, widgets)
	defer late.Release()
	time.Sleep(50 * time.Millisecond)
	if late.Informer.HasSynced() {
		t.Error("an informer acquired after Shutdown ran")
	}
}

func TestTrimMetadataKeepsOnlyWhatTheControllersRead(t *testing.T) {
	now := metav1.Now()
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "n", Namespace: "ns", UID: "u", ResourceVersion: "7", DeletionTimestamp: &now,
			OwnerReferences: []metav1.OwnerReference{{UID: "o"}}, Finalizers: []string{"f"},
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": "..."},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}, Generation: 3,
		},
	}
	out, err := trimMetadata(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &metav1.PartialObjectMetadata{
		TypeMeta: in.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns", UID: "u", ResourceVersion: "7", DeletionTimestamp: &now,
			OwnerReferences: []metav1.OwnerReference{{UID: "o"}}, Finalizers: []string{"f"}},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("trimMetadata() = %+v, want %+v", out, want)
	}
	if got, _ := trimMetadata("other"); got != "other" {
		t.Errorf("trimMetadata of a non-object = %v, want it unchanged", got)
	}
}
