package config

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/berth-cluster/berth/pkg/node/types"
)

func boundPod(name, node string) *v1.Pod {
	p := makePod(name).obj()
	p.Spec.NodeName = node
	return p
}

// TestSharedApiserverSource: one watch of every bound pod feeds each node agent only its
// own pods, with NewSourceApiserver's SET then incremental updates; a node that starts
// listening late still gets what was bound to it before.
func TestSharedApiserverSource(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(boundPod("a1", "node-a"), boundPod("b1", "node-b"), boundPod("a2", "node-a"))
	s := NewSharedApiserverSource(client)
	go s.Run(ctx)
	always := func() bool { return true }
	ua, ub := make(chan interface{}), make(chan interface{})
	s.Source(ctx, "node-a", always, ua)
	if got := describe([]types.PodUpdate{nextUpdate(t, ua)}); got != "SET:a1,a2" {
		t.Fatalf("node-a got %s, want SET:a1,a2", got)
	}
	s.Source(ctx, "node-b", always, ub)
	if got := describe([]types.PodUpdate{nextUpdate(t, ub)}); got != "SET:b1" {
		t.Fatalf("node-b got %s, want SET:b1", got)
	}

	pods := client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, boundPod("b2", "node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := describe([]types.PodUpdate{nextUpdate(t, ub)}); got != "ADD:b2" {
		t.Fatalf("node-b got %s, want ADD:b2", got)
	}
	if err := pods.Delete(ctx, "a1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := describe([]types.PodUpdate{nextUpdate(t, ua)}); got != "REMOVE:a1" {
		t.Fatalf("node-a got %s, want REMOVE:a1", got)
	}
	select {
	case u := <-ub:
		t.Fatalf("node-b got another node's change: %v", u)
	case <-time.After(200 * time.Millisecond):
	}
	watches := 0
	for _, a := range client.Actions() {
		if _, ok := a.(k8stesting.WatchAction); ok {
			watches++
		}
	}
	if watches != 1 {
		t.Errorf("%d watches of pods, want one for every node", watches)
	}
}
