package mirror

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/berth-cluster/berth/pkg/node/types"
)

func staticPod(hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-node-1", Namespace: "default", UID: ktypes.UID(hash),
			Annotations: map[string]string{
				types.ConfigHashAnnotationKey:   hash,
				types.ConfigSourceAnnotationKey: types.FileSource,
			},
		},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func node() (*v1.Node, error) {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}}, nil
}

func TestCreateMirrorPod(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	c := NewClient(client, "node-1", node)
	pod := staticPod("abc")
	if err := c.CreateMirrorPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("default").Get(ctx, "web-node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[types.ConfigMirrorAnnotationKey] != "abc" || got.Annotations[types.ConfigHashAnnotationKey] != "abc" {
		t.Errorf("annotations %v", got.Annotations)
	}
	if got.UID == "abc" {
		t.Error("the mirror pod kept the static pod's UID")
	}
	if got.Spec.NodeName != "node-1" {
		t.Errorf("nodeName %q", got.Spec.NodeName)
	}
	refs := got.OwnerReferences
	if len(refs) != 1 || refs[0].Kind != "Node" || refs[0].APIVersion != "v1" || refs[0].Name != "node-1" ||
		refs[0].UID != "node-uid" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references %+v", refs)
	}
	if _, ok := pod.Annotations[types.ConfigMirrorAnnotationKey]; ok || pod.OwnerReferences != nil {
		t.Error("CreateMirrorPod changed the static pod")
	}

	// The same static pod again: its mirror pod is there, fine.
	if err := c.CreateMirrorPod(ctx, pod); err != nil {
		t.Errorf("creating an existing mirror pod: %v", err)
	}
	// Another version of it while the old mirror pod is there: an error.
	err = c.CreateMirrorPod(ctx, staticPod("def"))
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("got %v, want a wrapped AlreadyExists", err)
	}
}

func TestCreateMirrorPodNeedsNode(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	c := NewClient(client, "node-1", func() (*v1.Node, error) { return nil, errors.New("no node yet") })
	if err := c.CreateMirrorPod(ctx, staticPod("abc")); err == nil {
		t.Error("created a mirror pod without the node")
	}
	c = NewClient(client, "node-1", func() (*v1.Node, error) { return &v1.Node{}, nil })
	if err := c.CreateMirrorPod(ctx, staticPod("abc")); err == nil {
		t.Error("created a mirror pod owned by a node without a UID")
	}
	if len(client.Actions()) != 0 {
		t.Errorf("API calls without a node: %v", client.Actions())
	}
}

func TestDeleteMirrorPod(t *testing.T) {
	ctx := context.Background()
	existing := staticPod("abc")
	existing.UID = "mirror-uid"
	client := fake.NewClientset(existing)
	c := NewClient(client, "node-1", node)

	uid := ktypes.UID("mirror-uid")
	deleted, err := c.DeleteMirrorPod(ctx, "web-node-1_default", &uid)
	if !deleted || err != nil {
		t.Fatalf("deleted=%v err=%v", deleted, err)
	}
	var opts *metav1.DeleteOptions
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			opts = &d.DeleteOptions
		}
	}
	if opts == nil || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 ||
		opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != uid {
		t.Errorf("delete options %+v, want grace 0 and the UID precondition", opts)
	}

	// Gone: not deleted, no error.
	if deleted, err := c.DeleteMirrorPod(ctx, "web-node-1_default", nil); deleted || err != nil {
		t.Errorf("deleting a missing pod: deleted=%v err=%v", deleted, err)
	}
	if _, err := c.DeleteMirrorPod(ctx, "no-namespace", nil); err == nil {
		t.Error("a malformed full name is not an error")
	}
}

func TestDeleteMirrorPodErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"another pod now has the name", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("uid mismatch")), false},
		{"the API server fails", apierrors.NewInternalError(errors.New("boom")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			deleted, err := NewClient(client, "node-1", node).DeleteMirrorPod(context.Background(), "web_default", nil)
			if deleted || (err != nil) != tt.wantErr {
				t.Fatalf("deleted=%v err=%v, want error %v", deleted, err, tt.wantErr)
			}
			if err != nil && !apierrors.IsInternalError(err) {
				t.Errorf("error %v does not wrap its cause", err)
			}
		})
	}
}

func TestNoAPIServer(t *testing.T) {
	c := NewClient(nil, "node-1", node)
	if err := c.CreateMirrorPod(context.Background(), staticPod("abc")); err != nil {
		t.Error(err)
	}
	if deleted, err := c.DeleteMirrorPod(context.Background(), "a_b", nil); deleted || err != nil {
		t.Error(deleted, err)
	}
}

func TestParsePodFullName(t *testing.T) {
	for in, ok := range map[string]bool{"a_b": true, "a": false, "_b": false, "a_": false, "a_b_c": false} {
		name, ns, err := ParsePodFullName(in)
		if (err == nil) != ok {
			t.Errorf("%q: err %v", in, err)
		}
		if ok && (name != "a" || ns != "b") {
			t.Errorf("%q: %q %q", in, name, ns)
		}
	}
}
