package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestCreateRetrying: a create that etcd timed out is retried and counted; a retry that finds
// the pod means the first attempt landed; a refusal is not retried.
func TestCreateRetrying(t *testing.T) {
	etcdTimeout := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	tests := []struct {
		name        string
		answers     []error
		wantErr     bool
		wantRetries int64
	}{
		{"first time", []error{nil}, false, 0},
		{"after a timeout", []error{etcdTimeout, nil}, false, 1},
		{"the timed-out create landed", []error{etcdTimeout, apierrors.NewAlreadyExists(corev1.Resource("pods"), "p")}, false, 1},
		{"already there at once", []error{apierrors.NewAlreadyExists(corev1.Resource("pods"), "p")}, true, 0},
		{"refused", []error{apierrors.NewBadRequest("no")}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewSimpleClientset()
			calls := 0
			client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				err := tt.answers[min(calls, len(tt.answers)-1)]
				calls++
				return true, &corev1.Pod{}, err
			})
			var retries atomic.Int64
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			err := createRetrying(context.Background(), &target{client: client}, "ns", pod, &retries)
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
			if retries.Load() != tt.wantRetries {
				t.Errorf("retries = %d, want %d", retries.Load(), tt.wantRetries)
			}
		})
	}
}
