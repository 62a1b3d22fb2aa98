package namespace

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDeletableResources(t *testing.T) {
	lists := []*metav1.APIResourceList{
		leaseResources,
		{GroupVersion: "not/a/group/version"},
		coreResources,
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "nodes", Namespaced: false, Verbs: allVerbs},
		}},
		nil,
	}
	got, err := deletableResources(lists)
	if err == nil || !strings.Contains(err.Error(), "not/a/group/version") {
		t.Errorf("err = %v, want the group version that does not parse", err)
	}
	want := []resource{
		{gvr: podsResource, deleteCollection: true, list: true},
		{gvr: configMaps, deleteCollection: true, list: true},
		{gvr: leases, list: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("resource %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestLeftoverOf(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	item := func(deletion *metav1.Time, finalizers ...string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", DeletionTimestamp: deletion, Finalizers: finalizers}}
	}
	tests := []struct {
		name         string
		items        []metav1.PartialObjectMetadata
		wantCount    int
		wantEstimate time.Duration
		wantErr      bool
	}{
		{name: "nothing left"},
		{name: "graceful deletions under way", items: []metav1.PartialObjectMetadata{item(at(10 * time.Second)), item(at(30 * time.Second))},
			wantCount: 2, wantEstimate: 30 * time.Second},
		{name: "held by finalizers", items: []metav1.PartialObjectMetadata{item(at(0), "example.com/hold")},
			wantCount: 1, wantEstimate: finalizerEstimate},
		{name: "grace period over, still there", items: []metav1.PartialObjectMetadata{item(at(-time.Second))},
			wantCount: 1, wantErr: true},
		{name: "not even marked deleted", items: []metav1.PartialObjectMetadata{item(nil)},
			wantCount: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := leftoverOf(tt.items, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "ns", now)
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
			if got.count != tt.wantCount || got.estimate != tt.wantEstimate {
				t.Errorf("got %d left, estimate %v; want %d, %v", got.count, got.estimate, tt.wantCount, tt.wantEstimate)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	for _, tt := range []struct{ estimate, want time.Duration }{
		{0, time.Second},
		{2 * time.Second, 2 * time.Second},
		{30 * time.Second, maxContentWait},
	} {
		if got := (&contentRemainingError{estimate: tt.estimate}).requeueAfter(); got != tt.want {
			t.Errorf("requeueAfter(%v) = %v, want %v", tt.estimate, got, tt.want)
		}
	}
}
