package objectcache

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// actions counts the client's requests of verb on resource.
func actions(client *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func run(t *testing.T, c *Cache) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	// Run has set its context once a Get starts a watch.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		running := c.ctx != nil
		c.mu.Unlock()
		if running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestGetsComeFromTheWatch(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
		Data:       map[string]string{"k": "1"},
	})
	c := New(client, nil)
	run(t, c)

	for range 5 {
		cm, err := c.GetConfigMap(ctx, "ns", "cm")
		if err != nil || cm.Data["k"] != "1" {
			t.Fatalf("GetConfigMap = %v, %v; want data k=1", cm, err)
		}
	}
	if gets, lists := actions(client, "get", "configmaps"), actions(client, "list", "configmaps"); gets != 0 || lists != 1 {
		t.Errorf("5 Gets made %d GETs and %d lists, want 0 and 1", gets, lists)
	}
	for _, a := range client.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok {
			if got := l.GetListRestrictions().Fields.String(); got != "metadata.name=cm" {
				t.Errorf("the list's field selector is %q, want metadata.name=cm", got)
			}
		}
	}
	// A change reaches Gets through the watch.
	eventually(t, "the watch", func() bool { return actions(client, "watch", "configmaps") == 1 })
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
		Data:       map[string]string{"k": "2"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the updated ConfigMap", func() bool {
		cm, err := c.GetConfigMap(ctx, "ns", "cm")
		return err == nil && cm.Data["k"] == "2"
	})
	if gets := actions(client, "get", "configmaps"); gets != 0 {
		t.Errorf("%d GETs, want 0", gets)
	}
	// A copy: the caller may not change the cache.
	cm, _ := c.GetConfigMap(ctx, "ns", "cm")
	cm.Data["k"] = "changed"
	if again, _ := c.GetConfigMap(ctx, "ns", "cm"); again.Data["k"] != "2" {
		t.Errorf("a caller's change reached the cache: %v", again.Data)
	}
}

func TestAbsentObjectIsNotFoundUntilCreated(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	c := New(client, nil)
	run(t, c)

	_, err := c.GetSecret(ctx, "ns", "absent")
	if err == nil || err.Error() != `secret "absent" not found` {
		t.Fatalf("GetSecret of an absent secret: %v, want the kubelet's `secret \"absent\" not found`", err)
	}
	eventually(t, "the watch", func() bool { return actions(client, "watch", "secrets") == 1 })
	if _, err := client.CoreV1().Secrets("ns").Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "absent"},
		Data:       map[string][]byte{"k": []byte("v")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the created Secret", func() bool {
		s, err := c.GetSecret(ctx, "ns", "absent")
		return err == nil && string(s.Data["k"]) == "v"
	})
}

func TestImmutableObjectIsNotWatched(t *testing.T) {
	ctx := context.Background()
	immutable := true
	client := fake.NewClientset(&v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
		Immutable:  &immutable,
		Data:       map[string][]byte{"k": []byte("v")},
	})
	c := New(client, nil)
	run(t, c)
	if s, err := c.GetSecret(ctx, "ns", "s"); err != nil || string(s.Data["k"]) != "v" {
		t.Fatalf("GetSecret = %v, %v", s, err)
	}
	if n := c.Watched(); n != 0 {
		t.Errorf("%d objects watched after an immutable secret was read, want 0", n)
	}
	if s, err := c.GetSecret(ctx, "ns", "s"); err != nil || string(s.Data["k"]) != "v" {
		t.Errorf("the immutable secret is no longer served: %v, %v", s, err)
	}
	if lists := actions(client, "list", "secrets"); lists != 1 {
		t.Errorf("%d lists, want 1", lists)
	}
}

func TestIdleObjectsStopBeingWatched(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "used"}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "idle"}},
	)
	clk := testingclock.NewFakeClock(time.Now())
	c := New(client, clk)
	run(t, c)
	for _, name := range []string{"used", "idle"} {
		if _, err := c.GetConfigMap(ctx, "ns", name); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(IdleTimeout / 2)
	if _, err := c.GetConfigMap(ctx, "ns", "used"); err != nil {
		t.Fatal(err)
	}
	clk.Step(IdleTimeout / 2)
	c.stopIdle()
	if n := c.Watched(); n != 1 {
		t.Errorf("%d objects watched after one was idle for IdleTimeout, want 1 (the one still read)", n)
	}
}

func TestGetsBeforeRunReadTheAPIServer(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}})
	c := New(client, nil)
	if _, err := c.GetConfigMap(ctx, "ns", "cm"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetConfigMap(ctx, "ns", "absent"); err == nil || err.Error() != `configmap "absent" not found` {
		t.Errorf("an absent ConfigMap before Run: %v, want `configmap \"absent\" not found`", err)
	}
	if gets := actions(client, "get", "configmaps"); gets != 2 {
		t.Errorf("%d GETs, want 2", gets)
	}
}
