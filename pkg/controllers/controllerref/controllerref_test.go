package controllerref

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func replicaSet() *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-uid"}}
}

func owner(rs *appsv1.ReplicaSet) Owner {
	return Owner{Object: rs, Kind: rsKind, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}
}

func pod(name string, podLabels map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, UID: types.UID(name + "-uid"), Labels: podLabels, OwnerReferences: refs,
	}}
}

var (
	matching = map[string]string{"app": "web"}
	other    = map[string]string{"app": "db"}
)

func controllerRef(uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: uid, Controller: ptr.To(true)}
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// TestClaimPods runs ClaimPods against a fake API and checks both what it claims and what
// the stored pods look like afterwards.
func TestClaimPods(t *testing.T) {
	deleting := metav1.Now()
	ours := *NewRef(replicaSet(), rsKind)
	tests := []struct {
		name       string
		deleting   bool // the owner is being deleted
		pods       []*corev1.Pod
		wantClaims []string
		// wantOwners is each pod's owner UIDs after the claim.
		wantOwners map[string][]types.UID
	}{
		{
			name:       "adopts a matching orphan",
			pods:       []*corev1.Pod{pod("orphan", matching)},
			wantClaims: []string{"orphan"},
			wantOwners: map[string][]types.UID{"orphan": {"rs-uid"}},
		},
		{
			name:       "keeps an owned matching pod",
			pods:       []*corev1.Pod{pod("owned", matching, ours)},
			wantClaims: []string{"owned"},
			wantOwners: map[string][]types.UID{"owned": {"rs-uid"}},
		},
		{
			name:       "releases an owned pod that no longer matches",
			pods:       []*corev1.Pod{pod("owned", other, ours)},
			wantOwners: map[string][]types.UID{"owned": nil},
		},
		{
			name:       "skips a non-matching orphan",
			pods:       []*corev1.Pod{pod("orphan", other)},
			wantOwners: map[string][]types.UID{"orphan": nil},
		},
		{
			name:       "skips a pod with another controller",
			pods:       []*corev1.Pod{pod("foreign", matching, controllerRef("other-uid"))},
			wantOwners: map[string][]types.UID{"foreign": {"other-uid"}},
		},
		{
			name: "adopts a pod with a non-controller owner",
			pods: []*corev1.Pod{pod("shared", matching,
				metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "cm-uid"})},
			wantClaims: []string{"shared"},
			wantOwners: map[string][]types.UID{"shared": {"rs-uid", "cm-uid"}}, // the strategic merge puts the patch's first
		},
		{
			name: "skips an orphan being deleted",
			pods: func() []*corev1.Pod {
				p := pod("going", matching)
				p.DeletionTimestamp = &deleting
				p.Finalizers = []string{"example.com/hold"}
				return []*corev1.Pod{p}
			}(),
			wantOwners: map[string][]types.UID{"going": nil},
		},
		{
			name: "skips an orphan in another namespace",
			pods: func() []*corev1.Pod {
				p := pod("elsewhere", matching)
				p.Namespace = "kube-system"
				return []*corev1.Pod{p}
			}(),
			wantOwners: map[string][]types.UID{},
		},
		{
			name:       "a deleting owner keeps what it owns but neither adopts nor releases",
			deleting:   true,
			pods:       []*corev1.Pod{pod("owned", matching, ours), pod("orphan", matching), pod("stale", other, ours)},
			wantClaims: []string{"owned"},
			wantOwners: map[string][]types.UID{"owned": {"rs-uid"}, "orphan": nil, "stale": {"rs-uid"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var objs []runtime.Object
			for _, p := range tc.pods {
				objs = append(objs, p.DeepCopy())
			}
			client := fake.NewClientset(objs...)
			rs := replicaSet()
			if tc.deleting {
				rs.DeletionTimestamp = &deleting
			}
			claimed, err := ClaimPods(ctx, owner(rs), tc.pods, podcontrol.New(client, nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(append([]string{}, tc.wantClaims...), names(claimed)); diff != "" {
				t.Errorf("claimed (-want +got):\n%s", diff)
			}
			for name, want := range tc.wantOwners {
				stored, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var got []types.UID
				for _, ref := range stored.OwnerReferences {
					got = append(got, ref.UID)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("owners of %s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestCanAdoptCalledOnce(t *testing.T) {
	ctx := context.Background()
	pods := []*corev1.Pod{pod("a", matching), pod("b", matching), pod("owned", other, *NewRef(replicaSet(), rsKind))}
	client := fake.NewClientset(pods[0], pods[1], pods[2])
	calls := 0
	o := owner(replicaSet())
	o.CanAdopt = func(context.Context) error { calls++; return nil }
	claimed, err := ClaimPods(ctx, o, pods, podcontrol.New(client, nil))
	if err != nil || len(claimed) != 2 || calls != 1 {
		t.Fatalf("claimed %v, err %v, CanAdopt called %d times; want a, b, nil, once", names(claimed), err, calls)
	}

	// A refused CanAdopt fails every adoption but not the release, and adopts nothing.
	calls = 0
	client = fake.NewClientset(pods[0], pods[1], pods[2])
	o.CanAdopt = func(context.Context) error { calls++; return errors.New("owner is being deleted") }
	claimed, err = ClaimPods(ctx, o, pods, podcontrol.New(client, nil))
	if err == nil || !strings.Contains(err.Error(), "can't adopt Pod default/a (a-uid): owner is being deleted") {
		t.Fatalf("err %v, want the adoption refused", err)
	}
	if len(claimed) != 0 || calls != 1 {
		t.Fatalf("claimed %v, CanAdopt called %d times", names(claimed), calls)
	}
	released, _ := client.CoreV1().Pods("default").Get(ctx, "owned", metav1.GetOptions{})
	if len(released.OwnerReferences) != 0 {
		t.Fatalf("owned pod not released: %v", released.OwnerReferences)
	}
}

func TestClaimPatchErrors(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "x", "uid mismatch")})
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("changed"))
	ours := *NewRef(replicaSet(), rsKind)
	tests := []struct {
		name    string
		pod     *corev1.Pod
		err     error
		wantErr bool
	}{
		{"release: gone", pod("p", other, ours), notFound, false},
		{"release: invalid (recreated)", pod("p", other, ours), invalid, false},
		{"release: conflict", pod("p", other, ours), conflict, true},
		{"adopt: gone", pod("p", matching), notFound, false},
		{"adopt: invalid", pod("p", matching), invalid, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claimed, err := Claim(context.Background(), owner(replicaSet()), []*corev1.Pod{tc.pod},
				func(context.Context, *corev1.Pod, []byte) error { return tc.err })
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, tc.err) {
				t.Fatalf("err %v does not wrap %v", err, tc.err)
			}
			if len(claimed) != 0 {
				t.Fatalf("claimed %v after a failed patch", names(claimed))
			}
		})
	}
}

func TestClaimOtherTypesAndMatch(t *testing.T) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-uid"}}
	o := Owner{Object: deploy, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Selector: labels.SelectorFromSet(labels.Set{"app": "web"}),
		Match:    func(obj metav1.Object) bool { return obj.GetName() != "filtered" }}
	rss := []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "1", Labels: matching}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "filtered", UID: "2", Labels: matching}},
	}
	var patched []string
	claimed, err := Claim(context.Background(), o, rss, func(_ context.Context, rs *appsv1.ReplicaSet, data []byte) error {
		patched = append(patched, rs.Name+" "+string(data))
		return nil
	})
	if err != nil || len(claimed) != 1 || claimed[0].Name != "web-1" {
		t.Fatalf("claimed %v, %v", claimed, err)
	}
	want := []string{`web-1 {"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"d-uid","controller":true,"blockOwnerDeletion":true}],"uid":"1"}}`}
	if diff := cmp.Diff(want, patched); diff != "" {
		t.Fatalf("patches (-want +got):\n%s", diff)
	}
}

func TestPatches(t *testing.T) {
	o := owner(replicaSet())
	p := pod("p", matching)
	if got, want := string(AdoptPatch(o, p)),
		`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-uid","controller":true,"blockOwnerDeletion":true}],"uid":"p-uid"}}`; got != want {
		t.Errorf("adopt patch\n got %s\nwant %s", got, want)
	}
	if got, want := string(ReleasePatch(o, p)),
		`{"metadata":{"uid":"p-uid","ownerReferences":[{"$patch":"delete","uid":"rs-uid"}]}}`; got != want {
		t.Errorf("release patch\n got %s\nwant %s", got, want)
	}
	o.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	var adopt map[string]map[string]any
	if err := json.Unmarshal(AdoptPatch(o, p), &adopt); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"batch.kubernetes.io/job-tracking"}, adopt["metadata"]["finalizers"]); diff != "" {
		t.Errorf("adopt finalizers (-want +got):\n%s", diff)
	}
	if got, want := string(ReleasePatch(o, p)),
		`{"metadata":{"uid":"p-uid","ownerReferences":[{"$patch":"delete","uid":"rs-uid"}],"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`; got != want {
		t.Errorf("release patch with finalizers\n got %s\nwant %s", got, want)
	}
}

func TestNewRef(t *testing.T) {
	ref := NewRef(replicaSet(), rsKind)
	want := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	if diff := cmp.Diff(want, ref); diff != "" {
		t.Fatalf("ref (-want +got):\n%s", diff)
	}
}

func TestRecheckDeletionTimestamp(t *testing.T) {
	ctx := context.Background()
	live := replicaSet()
	if err := RecheckDeletionTimestamp(func(context.Context) (metav1.Object, error) { return live, nil })(ctx); err != nil {
		t.Fatalf("live owner: %v", err)
	}
	deleted := replicaSet()
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	if err := RecheckDeletionTimestamp(func(context.Context) (metav1.Object, error) { return deleted, nil })(ctx); err == nil ||
		!strings.Contains(err.Error(), "default/web has just been deleted at") {
		t.Fatalf("deleted owner: %v", err)
	}
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web")
	if err := RecheckDeletionTimestamp(func(context.Context) (metav1.Object, error) { return nil, gone })(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("gone owner: %v, want the wrapped NotFound", err)
	}
}

// TestReleasePatchAppliesToPod checks the release patch against a real strategic merge of a
// pod with two owners: only the owner's reference goes.
func TestReleasePatchAppliesToPod(t *testing.T) {
	ctx := context.Background()
	p := pod("p", other, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "cm-uid"}, *NewRef(replicaSet(), rsKind))
	client := fake.NewClientset(p)
	var patchType types.PatchType
	client.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patchType = a.(clienttesting.PatchAction).GetPatchType()
		return false, nil, nil
	})
	if _, err := ClaimPods(ctx, owner(replicaSet()), []*corev1.Pod{p}, podcontrol.New(client, nil)); err != nil {
		t.Fatal(err)
	}
	stored, _ := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if len(stored.OwnerReferences) != 1 || stored.OwnerReferences[0].UID != "cm-uid" || patchType != types.StrategicMergePatchType {
		t.Fatalf("owners after release %v (patch type %s)", stored.OwnerReferences, patchType)
	}
}
