package defaultbinder

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// clientHandle is a Handle that only has a clientset.
type clientHandle struct {
	framework.Handle
	cs kubernetes.Interface
}

func (h clientHandle) ClientSet() kubernetes.Interface                        { return h.cs }
func (h clientHandle) SharedInformerFactory() informers.SharedInformerFactory { return nil }
func (h clientHandle) EventRecorder() events.EventRecorder                    { return nil }

func TestBind(t *testing.T) {
	pod := st.MakePod().Namespace("ns").Name("p").UID("uid-1").Obj()
	tests := []struct {
		name string
		// errs are returned by the API, one per call, then success.
		errs     []error
		wantCode framework.Code
		// wantCalls is how many bindings were posted.
		wantCalls int
	}{
		{name: "posts the binding", wantCode: framework.Success, wantCalls: 1},
		{name: "conflict is an error, not retried", errs: []error{apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("already bound"))}, wantCode: framework.Error, wantCalls: 1},
		{name: "unavailable API server is retried", errs: []error{apierrors.NewServiceUnavailable("later"), apierrors.NewInternalError(errors.New("oops"))}, wantCode: framework.Success, wantCalls: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(pod)
			var got []*v1.Binding
			cs.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "binding" {
					return false, nil, nil
				}
				got = append(got, action.(clienttesting.CreateAction).GetObject().(*v1.Binding))
				if n := len(got); n <= len(tt.errs) {
					return true, nil, tt.errs[n-1]
				}
				return true, nil, nil
			})
			pl, err := New(context.Background(), nil, clientHandle{cs: cs})
			if err != nil {
				t.Fatal(err)
			}
			status := pl.(framework.BindPlugin).Bind(context.Background(), framework.NewCycleState(), pod, "node-a")
			if status.Code() != tt.wantCode {
				t.Fatalf("status %v, want code %v", status, tt.wantCode)
			}
			if len(got) != tt.wantCalls {
				t.Fatalf("%d bindings posted, want %d", len(got), tt.wantCalls)
			}
			b := got[0]
			if b.Namespace != "ns" || b.Name != "p" || b.UID != "uid-1" || b.Target.Kind != "Node" || b.Target.Name != "node-a" {
				t.Errorf("binding %+v", b)
			}
		})
	}
}
