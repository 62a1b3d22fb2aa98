package serviceaccount

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
	if phase == corev1.NamespaceTerminating {
		ns.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return ns
}

func serviceAccount(ns, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// terminatingRefusal is NamespaceLifecycle admission's answer to a create in a terminating namespace.
func terminatingRefusal() error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, DefaultName,
		errors.New("unable to create new content in namespace ns because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes,
		metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"})
	return err
}

func TestSyncNamespace(t *testing.T) {
	tests := []struct {
		name      string
		objects   []runtime.Object
		createErr error
		wantErr   bool
		wantSA    bool // "default" exists in "ns" afterwards
		wantCalls int  // creates
	}{
		{name: "new namespace gets default", objects: []runtime.Object{namespace("ns", corev1.NamespaceActive)},
			wantSA: true, wantCalls: 1},
		{name: "default already there", objects: []runtime.Object{namespace("ns", corev1.NamespaceActive), serviceAccount("ns", DefaultName)},
			wantSA: true},
		{name: "other accounts do not count", objects: []runtime.Object{namespace("ns", corev1.NamespaceActive), serviceAccount("ns", "builder")},
			wantSA: true, wantCalls: 1},
		{name: "terminating namespace is left alone", objects: []runtime.Object{namespace("ns", corev1.NamespaceTerminating)}},
		{name: "namespace gone", objects: nil},
		{name: "namespace started terminating behind the cache", objects: []runtime.Object{namespace("ns", corev1.NamespaceActive)},
			createErr: terminatingRefusal(), wantCalls: 1},
		{name: "create fails", objects: []runtime.Object{namespace("ns", corev1.NamespaceActive)},
			createErr: apierrors.NewServiceUnavailable("try later"), wantErr: true, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objects...)
			if tt.createErr != nil {
				client.PrependReactor("create", "serviceaccounts", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.createErr
				})
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			c := NewController(client, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
			defer c.queue.ShutDown()
			// Fill the caches the sync reads from, without running informers.
			for _, obj := range tt.objects {
				var err error
				switch o := obj.(type) {
				case *corev1.Namespace:
					err = factory.Core().V1().Namespaces().Informer().GetIndexer().Add(o)
				case *corev1.ServiceAccount:
					err = factory.Core().V1().ServiceAccounts().Informer().GetIndexer().Add(o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			client.ClearActions()

			err := c.syncNamespace(context.Background(), "ns")
			if (err != nil) != tt.wantErr {
				t.Fatalf("syncNamespace() = %v, want error %v", err, tt.wantErr)
			}
			creates := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" {
					creates++
				}
			}
			if creates != tt.wantCalls {
				t.Errorf("creates = %d, want %d", creates, tt.wantCalls)
			}
			_, err = client.CoreV1().ServiceAccounts("ns").Get(context.Background(), DefaultName, metav1.GetOptions{})
			if got := err == nil; got != tt.wantSA {
				t.Errorf("default service account exists = %v, want %v", got, tt.wantSA)
			}
		})
	}
}

// TestRun drives the controller through its informers: "default" appears in a new namespace,
// comes back after it is deleted, and Run returns once its context ends.
func TestRun(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, 2)
	}()

	waitForDefault := func(what string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ServiceAccounts("ns").Get(ctx, DefaultName, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("%s: default service account did not appear: %v", what, err)
		}
	}

	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace("ns", corev1.NamespaceActive), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForDefault("new namespace")

	if err := client.CoreV1().ServiceAccounts("ns").Delete(ctx, DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForDefault("after deletion")

	cancel()
	factory.Shutdown()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
