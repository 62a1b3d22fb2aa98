package envvars

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
)

func apiPod(ns string, links *bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p",
		Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.ApiserverSource}},
		Spec: v1.PodSpec{EnableServiceLinks: links}}
}

func staticPod(ns string) *v1.Pod {
	p := apiPod(ns, nil)
	p.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.FileSource
	return p
}

// run runs s until the test ends.
func run(t *testing.T, s *Services) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestServicesEnvFor: the informer's Services become the pod's variables, and follow changes.
func TestServicesEnvFor(t *testing.T) {
	client := fake.NewClientset(
		service("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP)),
		service("ns", "fooservice", "10.96.5.6", port("", 8765, "")),
		service("other", "elsewhere", "10.96.9.9", port("", 80, "")),
	)
	s := NewServices(client)
	run(t, s)
	waitFor(t, "the services to sync", s.HasSynced)
	ctx := context.Background()

	got, err := s.EnvFor(ctx, apiPod("ns", nil)) // enableServiceLinks defaults to true
	if err != nil {
		t.Fatal(err)
	}
	if got["FOOSERVICE_SERVICE_HOST"] != "10.96.5.6" || got["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || got["ELSEWHERE_SERVICE_HOST"] != "" {
		t.Errorf("EnvFor() = %v", got)
	}
	if got, _ := s.EnvFor(ctx, apiPod("ns", ptr(false))); !maps.Equal(got, kubernetesVars) {
		t.Errorf("enableServiceLinks false: %v, want the master service's only", got)
	}

	// A Service created later is seen by the next container.
	if _, err := client.CoreV1().Services("ns").Create(ctx, service("ns", "late", "10.96.4.4", port("", 81, "")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new service", func() bool {
		got, _ := s.EnvFor(ctx, apiPod("ns", nil))
		return got["LATE_SERVICE_PORT"] == "81"
	})
}

// TestServicesWaitForSync: a pod from the API server gets no variables before the first list
// of Services (the kubelet's serviceHasSynced): it waits for it, and fails with the kubelet's
// error if it never comes; a static pod does not wait.
func TestServicesWaitForSync(t *testing.T) {
	client := fake.NewClientset(service("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP)))
	release := make(chan struct{})
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release // the list hangs until the test lets it through
		return false, nil, nil
	})
	s := NewServices(client)
	s.syncWait = 50 * time.Millisecond
	run(t, s)
	ctx := context.Background()

	if _, err := s.EnvFor(ctx, apiPod("ns", nil)); err == nil || err.Error() != "services have not yet been read at least once, cannot construct envvars" {
		t.Errorf("before the first list: %v, want the kubelet's error", err)
	}
	if got, err := s.EnvFor(ctx, staticPod("ns")); err != nil || len(got) != 0 {
		t.Errorf("a static pod before the first list: %v, %v; want no variables and no error", got, err)
	}

	// A pod that comes while the list is under way waits for it.
	s.syncWait = 10 * time.Second
	type result struct {
		env map[string]string
		err error
	}
	done := make(chan result, 1)
	go func() { env, err := s.EnvFor(ctx, apiPod("ns", nil)); done <- result{env, err} }()
	select {
	case r := <-done:
		t.Fatalf("EnvFor returned before the services were listed: %v", r)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	r := <-done
	if r.err != nil || r.env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("after the list: %v, %v", r.env, r.err)
	}
}

// TestServicesNotServed: an API server without a services resource (404, as berth's until
// it serves them) counts as no services, said once in the log, and pods start.
func TestServicesNotServed(t *testing.T) {
	client := fake.NewClientset()
	var lists atomic.Int32
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "")
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, notFound
	})
	client.PrependWatchReactor("services", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, notFound
	})
	s := NewServices(client)
	run(t, s)
	waitFor(t, "the 404 to count as synced", s.HasSynced)
	if s.informer.HasSynced() {
		t.Fatal("the informer synced though every list failed")
	}
	got, err := s.EnvFor(context.Background(), apiPod("ns", nil))
	if err != nil || len(got) != 0 {
		t.Errorf("EnvFor() = %v, %v; want no variables and no error", got, err)
	}
	if lists.Load() == 0 {
		t.Error("the services were never listed")
	}
}

// TestServicesOtherErrors: any other list error is no reason to start pods without their
// variables.
func TestServicesOtherErrors(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "", errors.New("no"))
	})
	s := NewServices(client)
	s.syncWait = 200 * time.Millisecond
	run(t, s)
	if _, err := s.EnvFor(context.Background(), apiPod("ns", nil)); !errors.Is(err, errNotSynced) {
		t.Errorf("with the list forbidden: %v, want %v", err, errNotSynced)
	}
}

func ptr[T any](v T) *T { return &v }
