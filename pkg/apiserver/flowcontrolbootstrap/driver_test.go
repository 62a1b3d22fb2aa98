package flowcontrolbootstrap

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Apply writes the plan and counts what a concurrent writer did first as done.
func TestApply(t *testing.T) {
	ctx := context.Background()
	exists := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "exists"}}
	client := fake.NewClientset(exists)
	client.PrependReactor("update", "prioritylevelconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is down")
	})
	plan := []Action{
		{Verb: Create, Set: suggested, FlowSchema: exists.DeepCopy()},
		{Verb: Create, Set: suggested, FlowSchema: &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "new"}}},
		{Verb: Update, Set: mandatory, PriorityLevel: &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"}}},
		{Verb: Delete, Set: unwanted, FlowSchema: &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}},
		{Verb: Delete, Set: unwanted, FlowSchema: exists.DeepCopy()},
	}
	err := Apply(ctx, client.FlowcontrolV1(), plan)
	if err == nil || !strings.Contains(err.Error(), `Update PriorityLevelConfiguration "catch-all" (mandatory): etcd is down`) || strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("Apply: %v, want only the update's failure", err)
	}
	if _, err := client.FlowcontrolV1().FlowSchemas().Get(ctx, "new", metav1.GetOptions{}); err != nil {
		t.Errorf("the new schema: %v", err)
	}
	if _, err := client.FlowcontrolV1().FlowSchemas().Get(ctx, "exists", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the unwanted schema: %v, want it deleted", err)
	}
}

// The producer writes the configuration into an empty server, and puts a deleted mandatory
// object back as soon as the informer sees it go.
func TestProducerRestoresAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := NewProducer(Default(), factory.Flowcontrol().V1())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	if !waitSynced(ctx, p) {
		t.Fatal("informers did not sync")
	}
	fc := client.FlowcontrolV1()
	if err := p.syncOnce(ctx, fc); err != nil {
		t.Fatal(err)
	}
	go p.run(ctx, fc)
	if err := fc.FlowSchemas().Delete(ctx, "catch-all", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := fc.FlowSchemas().Get(ctx, "catch-all", metav1.GetOptions{}); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("catch-all was not restored")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func waitSynced(ctx context.Context, p *Producer) bool {
	for {
		done := true
		for _, s := range p.synced {
			done = done && s()
		}
		if done {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}
