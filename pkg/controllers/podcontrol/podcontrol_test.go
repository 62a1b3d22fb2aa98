package podcontrol

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

func owner() *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-uid"}}
}

func TestSlowStartBatch(t *testing.T) {
	fail := errors.New("quota exceeded")
	tests := []struct {
		name           string
		count, initial int
		// failFrom makes the calls from this one on (counting from 1) fail; 0 never.
		failFrom      int
		wantCalls     int
		wantSuccesses int
		wantErr       bool
	}{
		{name: "none", count: 0, initial: 1},
		{name: "batches of 1, 2, 4, 3", count: 10, initial: 1, wantCalls: 10, wantSuccesses: 10},
		{name: "initial batch larger than count", count: 3, initial: 5, wantCalls: 3, wantSuccesses: 3},
		// The first call fails: the first batch is its only one.
		{name: "fails at once", count: 10, initial: 1, failFrom: 1, wantCalls: 1, wantErr: true},
		// Calls 1 (batch 1) and 2-3 (batch 2) succeed; batch 3 (calls 4-7) has failures and
		// is the last one run.
		{name: "fails in the third batch", count: 20, initial: 1, failFrom: 5, wantCalls: 7, wantSuccesses: 4, wantErr: true},
		{name: "initial batch of 2", count: 20, initial: 2, failFrom: 7, wantCalls: 14, wantSuccesses: 6, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			successes, err := SlowStartBatch(context.Background(), tc.count, tc.initial, func() error {
				if n := int(calls.Add(1)); tc.failFrom > 0 && n >= tc.failFrom {
					return fail
				}
				return nil
			})
			if int(calls.Load()) != tc.wantCalls || successes != tc.wantSuccesses || (err != nil) != tc.wantErr {
				t.Fatalf("calls %d, successes %d, err %v; want %d, %d, error %v",
					calls.Load(), successes, err, tc.wantCalls, tc.wantSuccesses, tc.wantErr)
			}
			if err != nil && !errors.Is(err, fail) {
				t.Fatalf("err %v is not the call's", err)
			}
		})
	}
}

// TestSlowStartBatchConcurrent checks that a batch's calls run at once: the batch of 4 waits
// until all 4 have started.
func TestSlowStartBatchConcurrent(t *testing.T) {
	var started sync.WaitGroup
	started.Add(4)
	var calls atomic.Int32
	_, err := SlowStartBatch(context.Background(), 7, 1, func() error {
		if n := calls.Add(1); n >= 4 { // calls 4-7 make the third batch
			started.Done()
			started.Wait()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSlowStartBatchPanic: a call that panics, in a goroutine of its own, does not take the
// process down: its batch fails with the panic as the error, and no later batch starts.
func TestSlowStartBatchPanic(t *testing.T) {
	var calls atomic.Int32
	successes, err := SlowStartBatch(context.Background(), 7, 1, func() error {
		if calls.Add(1) == 2 {
			panic("bad pod")
		}
		return nil
	})
	var recovered *panics.Error
	if !errors.As(err, &recovered) || recovered.Value != "bad pod" {
		t.Fatalf("error %v, want the recovered panic", err)
	}
	if successes != 2 || calls.Load() != 3 {
		t.Errorf("%d successes of %d calls, want 2 of 3 (batches 1 and 2, then stop)", successes, calls.Load())
	}
}

func TestPodFromTemplate(t *testing.T) {
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "x"},
			Finalizers:  []string{"example.com/f"},
			Name:        "ignored",
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	rs := owner()
	ref := metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	pod := PodFromTemplate(template, rs, ref)
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       "default",
			GenerateName:    "web-",
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{"note": "x"},
			Finalizers:      []string{"example.com/f"},
			OwnerReferences: []metav1.OwnerReference{*ref},
		},
		Spec: template.Spec,
	}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Fatalf("pod (-want +got):\n%s", diff)
	}
	// The pod shares nothing with the template.
	pod.Labels["app"] = "changed"
	pod.Spec.Containers[0].Image = "changed"
	if template.Labels["app"] != "web" || template.Spec.Containers[0].Image != "nginx" {
		t.Fatal("the pod shares maps or slices with its template")
	}

	if p := PodFromTemplate(template, rs, nil); len(p.OwnerReferences) != 0 {
		t.Fatalf("owner references %v without a ref", p.OwnerReferences)
	}
}

func TestPodsPrefix(t *testing.T) {
	if got := podsPrefix("web"); got != "web-" {
		t.Errorf("prefix of web %q, want web-", got)
	}
	// Upstream's check masks the trailing dash (dropping the character before it too), so even
	// the longest valid name keeps its dash; the API server truncates a long generateName.
	long := strings.Repeat("a", 253)
	if got := podsPrefix(long); got != long+"-" {
		t.Errorf("prefix of a 253-character name is %d characters, want 254", len(got))
	}
	// A prefix that is invalid with its dash (here, for its uppercase) goes without it.
	if got := podsPrefix("Web"); got != "Web" {
		t.Errorf("prefix of Web %q, want Web", got)
	}
}

// generateNames makes the fake clientset name created pods as the API server would.
func generateNames(client *fake.Clientset) {
	var n atomic.Int32
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = pod.GenerateName + string(rune('a'+n.Add(1)-1))
		}
		return false, nil, nil
	})
}

func recv(t *testing.T, recorder *events.FakeRecorder) []string {
	t.Helper()
	var got []string
	for {
		select {
		case e := <-recorder.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

func TestCreatePod(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	generateNames(client)
	recorder := events.NewFakeRecorder(10)
	pc := New(client, recorder)

	template := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	pod := PodFromTemplate(template, owner(), nil)
	pod.Namespace = "" // the owner's namespace is used
	if err := pc.CreatePod(ctx, pod, owner()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Get(ctx, "web-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("the created pod: %v", err)
	}
	if diff := cmp.Diff([]string{"Normal SuccessfulCreate Created pod: web-a"}, recv(t, recorder)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// No labels: refused before any call.
	if err := pc.CreatePod(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}}, owner()); err == nil {
		t.Error("a pod without labels was created")
	}
}

func TestCreatePodFailures(t *testing.T) {
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `pods "web-a" is forbidden: unable to create new content in namespace default because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
	}}
	tests := []struct {
		name       string
		err        error
		wantEvents []string
	}{
		{
			name:       "forbidden",
			err:        apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota")),
			wantEvents: []string{`Warning FailedCreate Error creating: pods is forbidden: exceeded quota`},
		},
		{name: "namespace terminating", err: terminating},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			recorder := events.NewFakeRecorder(10)
			pod := PodFromTemplate(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}, owner(), nil)
			err := New(client, recorder).CreatePod(context.Background(), pod, owner())
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.wantEvents, recv(t, recorder)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletePod(t *testing.T) {
	ctx := context.Background()
	existing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-a", UID: "pod-uid"}}
	client := fake.NewClientset(existing)
	var preconditions []*metav1.Preconditions
	client.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		preconditions = append(preconditions, action.(clienttesting.DeleteAction).GetDeleteOptions().Preconditions)
		return false, nil, nil
	})
	recorder := events.NewFakeRecorder(10)
	pc := New(client, recorder)

	if err := pc.DeletePod(ctx, "default", "web-a", "pod-uid", owner()); err != nil {
		t.Fatal(err)
	}
	if len(preconditions) != 1 || preconditions[0] == nil || *preconditions[0].UID != "pod-uid" {
		t.Fatalf("delete preconditions %v, want the pod's UID", preconditions)
	}
	// Gone already: a NotFound comes back, unevented.
	err := pc.DeletePod(ctx, "default", "web-a", "", owner())
	if !apierrors.IsNotFound(err) {
		t.Fatalf("deleting a missing pod: %v, want NotFound", err)
	}
	if preconditions[1] != nil {
		t.Errorf("an empty uid sent preconditions %v", preconditions[1])
	}
	if diff := cmp.Diff([]string{"Normal SuccessfulDelete Deleted pod: web-a"}, recv(t, recorder)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	err = pc.DeletePod(ctx, "default", "web-b", "", owner())
	if err == nil || !apierrors.IsInternalError(err) {
		t.Fatalf("err %v, want the wrapped internal error", err)
	}
	if got := recv(t, recorder); len(got) != 1 || !strings.HasPrefix(got[0], "Warning FailedDelete Error deleting: ") {
		t.Errorf("events %q, want one FailedDelete", got)
	}
}

func TestNilAndDeferredRecorder(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}})
	// A nil recorder records nothing, and does not crash.
	if err := New(client, nil).DeletePod(ctx, "default", "a", "", owner()); err != nil {
		t.Fatal(err)
	}
	// NewDeferred reads the recorder at each event: set after construction, it is used.
	var field events.EventRecorder
	pc := NewDeferred(client, &field)
	recorder := events.NewFakeRecorder(10)
	field = recorder
	if err := pc.DeletePod(ctx, "default", "b", types.UID(""), owner()); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, recorder); len(got) != 1 {
		t.Fatalf("events %q, want the deferred recorder's one", got)
	}
}

func TestPatchPod(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	if err := New(client, nil).PatchPod(ctx, "default", "a", []byte(`{"metadata":{"labels":{"x":"y"}}}`)); err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || pod.Labels["x"] != "y" {
		t.Fatalf("patched pod %v, %v", pod, err)
	}
	patches := 0
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patches++
			if p.GetPatchType() != types.StrategicMergePatchType {
				t.Errorf("patch type %s, want strategic merge", p.GetPatchType())
			}
		}
	}
	if patches != 1 {
		t.Fatalf("%d patches, want 1", patches)
	}
}
