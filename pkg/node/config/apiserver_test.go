package config

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/berth-cluster/berth/pkg/node/types"
)

func nextUpdate(t *testing.T, updates <-chan interface{}) types.PodUpdate {
	t.Helper()
	select {
	case obj := <-updates:
		return obj.(types.PodUpdate)
	case <-time.After(testTimeout):
		t.Fatal("no update")
		return types.PodUpdate{}
	}
}

func TestSourceApiserver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(makePod("b").obj(), makePod("a").obj())
	var nodeSynced atomic.Bool
	updates := make(chan interface{})
	NewSourceApiserver(ctx, client, "node-1", nodeSynced.Load, updates)

	// Nothing is watched before the node is known.
	select {
	case obj := <-updates:
		t.Fatalf("update before the node synced: %v", obj)
	case <-time.After(200 * time.Millisecond):
	}
	for _, a := range client.Actions() {
		t.Fatalf("API call before the node synced: %v", a)
	}
	nodeSynced.Store(true)

	u := nextUpdate(t, updates)
	if got := describe([]types.PodUpdate{u}); got != "SET:a,b" || u.Source != types.ApiserverSource {
		t.Fatalf("got %s from %q, want the SET of every pod", got, u.Source)
	}
	listed := false
	for _, a := range client.Actions() {
		if r, ok := a.(k8stesting.ListAction); ok {
			listed = true
			if got := r.GetListRestrictions().Fields.String(); got != "spec.nodeName=node-1" {
				t.Errorf("listed pods with field selector %q", got)
			}
		}
	}
	if !listed {
		t.Error("no list of pods")
	}

	pods := client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, makePod("c").obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := describe([]types.PodUpdate{nextUpdate(t, updates)}); got != "ADD:c" {
		t.Fatalf("got %s, want ADD:c", got)
	}
	if _, err := pods.Update(ctx, makePod("c").image("busybox:2").obj(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := describe([]types.PodUpdate{nextUpdate(t, updates)}); got != "UPDATE:c" {
		t.Fatalf("got %s, want UPDATE:c", got)
	}
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := describe([]types.PodUpdate{nextUpdate(t, updates)}); got != "REMOVE:a" {
		t.Fatalf("got %s, want REMOVE:a", got)
	}
}

func TestApiserverSnapshotAndBatch(t *testing.T) {
	a, b, c := makePod("a").obj(), makePod("b").obj(), makePod("c").obj()
	a2 := makePod("a").image("busybox:2").obj()
	events := []podEvent{
		{types.ADD, c}, {types.ADD, a}, {types.ADD, b},
		{types.UPDATE, a}, {types.UPDATE, a2}, {types.REMOVE, b},
	}
	if got := describe([]types.PodUpdate{{Op: types.SET, Pods: snapshot(events)}}); got != "SET:a,c" {
		t.Errorf("snapshot: %s, want SET:a,c", got)
	}
	got := batch(events)
	if describe(got) != "ADD:c,a,b UPDATE:a REMOVE:b" {
		t.Fatalf("batch: %s", describe(got))
	}
	if got[1].Pods[0] != a2 {
		t.Error("a pod changed twice in a batch is not its latest version")
	}
	for _, u := range got {
		if u.Source != types.ApiserverSource {
			t.Errorf("batch source %q", u.Source)
		}
	}
	if len(batch(nil)) != 0 {
		t.Error("batch of nothing is not empty")
	}
}

// The source and the merge together: an apiserver pod deleted gracefully is a DELETE, then a
// REMOVE when it is gone.
func TestApiserverThroughPodConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(makePod("a").obj())
	cfg := NewPodConfig(nil)
	NewSourceApiserver(ctx, client, "node-1", func() bool { return true }, cfg.Channel(ctx, types.ApiserverSource))

	want := func(s string) {
		t.Helper()
		if got := describe([]types.PodUpdate{next(t, cfg.Updates())}); got != s {
			t.Fatalf("got %s, want %s", got, s)
		}
	}
	want("ADD:a")
	pods := client.CoreV1().Pods("default")
	deleting := makePod("a").deleting().obj()
	if _, err := pods.Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("DELETE:a")
	running := deleting.DeepCopy()
	running.Status.Phase = v1.PodRunning
	if _, err := pods.UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("RECONCILE:a")
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want("REMOVE:a")
}
