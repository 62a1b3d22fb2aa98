package history

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
)

var setKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

func raw(s string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(s)}}
}

// The expected hashes are FNV-32 (not 32a) of the data and probe, printed in decimal and
// safe-encoded, computed outside Go: they pin the hash to upstream's algorithm.
func TestHash(t *testing.T) {
	tests := []struct {
		data  string
		probe *int32
		want  string
	}{
		{"", nil, "65bb57b6b5"},
		{`{"a":1}`, nil, "69966c9df7"},
		{`{"a":1}`, ptr.To[int32](0), "d55c4ff5f"},
		{`{"a":1}`, ptr.To[int32](1), "d55c4ff5d"},
	}
	for _, tt := range tests {
		if got := Hash(raw(tt.data), tt.probe); got != tt.want {
			t.Errorf("Hash(%q, %v) = %q, want %q", tt.data, tt.probe, got, tt.want)
		}
	}
}

func TestHashObjectRestartsTheHash(t *testing.T) {
	withRaw := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte("x"), Object: &appsv1.StatefulSet{}}}
	withoutRaw := &appsv1.ControllerRevision{Data: runtime.RawExtension{Object: &appsv1.StatefulSet{}}}
	if Hash(withRaw, nil) != Hash(withoutRaw, nil) {
		t.Error("an Object's hash depends on Raw; upstream's DeepHashObject resets the hash first")
	}
}

func TestName(t *testing.T) {
	if got := Name("web", "abc"); got != "web-abc" {
		t.Errorf("Name = %q", got)
	}
	long := strings.Repeat("a", 300)
	if got := Name(long, "abc"); got != strings.Repeat("a", 223)+"-abc" {
		t.Errorf("long name not cut to 223 characters: %d", len(got))
	}
}

func parent() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "set-uid"}}
}

func TestNew(t *testing.T) {
	cr := New(parent(), setKind, map[string]string{"app": "web"}, runtime.RawExtension{Raw: []byte(`{"a":1}`)}, 3, ptr.To[int32](0))
	if cr.Name != "web-d55c4ff5f" || cr.Namespace != "ns" || cr.Revision != 3 {
		t.Errorf("got %s/%s revision %d", cr.Namespace, cr.Name, cr.Revision)
	}
	if cr.Labels["app"] != "web" || cr.Labels[ControllerRevisionHashLabel] != "d55c4ff5f" {
		t.Errorf("labels %v", cr.Labels)
	}
	ref := metav1.GetControllerOf(cr)
	if ref == nil || ref.UID != "set-uid" || ref.Kind != "StatefulSet" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller ref %+v", ref)
	}
}

func TestSortAndFind(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(100, 0))
	t1 := metav1.NewTime(time.Unix(200, 0))
	revs := []*appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: t0}, Revision: 2, Data: runtime.RawExtension{Raw: []byte("A")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: t1}, Revision: 1, Data: runtime.RawExtension{Raw: []byte("B")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: t1}, Revision: 1, Data: runtime.RawExtension{Raw: []byte("A")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "d", CreationTimestamp: t0}, Revision: 1, Data: runtime.RawExtension{Raw: []byte("C")}},
	}
	Sort(revs)
	var names []string
	for _, r := range revs {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "d,a,b,c" {
		t.Errorf("sorted %s, want d,a,b,c (revision, then creation, then name)", got)
	}
	if Next(revs) != 3 || Next(nil) != 1 {
		t.Errorf("Next = %d, %d", Next(revs), Next(nil))
	}
	eq := FindEqual(revs, raw("A"))
	if len(eq) != 2 || eq[0].Name != "a" || eq[1].Name != "c" {
		t.Errorf("FindEqual = %v", eq)
	}
	if !Equal(nil, nil) || Equal(nil, raw("A")) {
		t.Error("Equal on nils")
	}
}

func newHistory(t *testing.T, objs ...runtime.Object) (*History, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Apps().V1().ControllerRevisions()
	h := NewHistory(client, inf)
	// A second controller on the same informer adds no second index.
	NewHistory(client, inf)
	for _, o := range objs {
		if err := inf.Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return h, client
}

func TestCreateCollision(t *testing.T) {
	p := parent()
	want := New(p, setKind, nil, runtime.RawExtension{Raw: []byte(`{"a":1}`)}, 1, ptr.To[int32](0))
	// Another revision already holds the name of count 0, with other data.
	squatter := want.DeepCopy()
	squatter.Data.Raw = []byte(`{"b":2}`)
	h, _ := newHistory(t, squatter)

	count := int32(0)
	created, err := h.Create(context.Background(), p, want, &count)
	if err != nil {
		t.Fatal(err)
	}
	if count != 1 || created.Name != "web-d55c4ff5d" {
		t.Errorf("after a collision: count %d, name %s; want 1, web-d55c4ff5d", count, created.Name)
	}

	// Creating the same data again finds it and keeps the count.
	again, err := h.Create(context.Background(), p, want, &count)
	if err != nil {
		t.Fatal(err)
	}
	if count != 1 || again.Name != created.Name {
		t.Errorf("second create: count %d, name %s", count, again.Name)
	}
	if _, err := h.Create(context.Background(), p, want, nil); err == nil {
		t.Error("nil collisionCount accepted")
	}
}

func TestListAndClaim(t *testing.T) {
	p := parent()
	ref := metav1.NewControllerRef(p, setKind)
	other := metav1.NewControllerRef(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "db-uid"}}, setKind)
	rev := func(name string, app string, ref *metav1.OwnerReference) *appsv1.ControllerRevision {
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{"app": app}}}
		if ref != nil {
			cr.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		return cr
	}
	owned := rev("web-1", "web", ref)
	orphan := rev("web-2", "web", nil)
	foreign := rev("db-1", "web", other)
	ownedNoMatch := rev("web-3", "other", ref)
	elsewhere := rev("web-4", "web", nil)
	elsewhere.Namespace = "other"
	h, client := newHistory(t, owned, orphan, foreign, ownedNoMatch, elsewhere)

	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	listed, err := h.List(p, setKind, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 {
		t.Fatalf("List = %d revisions, want web-1 and web-2", len(listed))
	}

	all, err := h.List(p, setKind, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := h.Claim(context.Background(), controllerref.Owner{Object: p, Kind: setKind, Selector: sel}, all)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 2 {
		t.Errorf("claimed %d, want web-1 and web-2", len(claimed))
	}
	var patched []string
	for _, a := range client.Actions() {
		if pa, ok := a.(clienttesting.PatchAction); ok {
			patched = append(patched, pa.GetName())
		}
	}
	if strings.Join(patched, ",") != "web-2,web-3" && strings.Join(patched, ",") != "web-3,web-2" {
		t.Errorf("patched %v, want the orphan adopted and the unmatched one released", patched)
	}
}

func TestRenumberAndDelete(t *testing.T) {
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}, Revision: 1}
	h, client := newHistory(t, cr)
	got, err := h.Renumber(context.Background(), cr, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 5 {
		t.Errorf("Revision = %d", got.Revision)
	}
	stored, _ := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), "web-1", metav1.GetOptions{})
	if stored.Revision != 5 {
		t.Errorf("stored Revision = %d", stored.Revision)
	}
	if err := h.Delete(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(context.Background(), cr); err != nil {
		t.Errorf("deleting a gone revision: %v", err)
	}
}
