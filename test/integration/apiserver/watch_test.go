package apiserver

import (
	"context"

	"fmt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/berth-cluster/berth/test/integration/framework"
)

// TestInformerFieldSelector: an informer on spec.nodeName=X, as a node agent runs it, sees
// that node's pods and no others.
func TestInformerFieldSelector(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "node-x").String()
		}))
	informer := factory.Core().V1().Pods().Informer()
	seen := make(chan string, 100)
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { seen <- obj.(*corev1.Pod).Name },
	})
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	for i, node := range []string{"node-x", "node-y", "", "node-x"} {
		p := simplePod(fmt.Sprintf("p%d", i))
		p.Spec.NodeName = node
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Bind the unbound one to node-x later: it enters the selection then.
	if err := c.Client.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p2"}, Target: corev1.ObjectReference{Name: "node-x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(got) < 3 {
		select {
		case name := <-seen:
			got[name] = true
		case <-timeout:
			t.Fatalf("informer saw %v, want p0, p2, p3", got)
		}
	}
	select {
	case name := <-seen:
		t.Errorf("informer saw %s, which is not on node-x", name)
	case <-time.After(300 * time.Millisecond):
	}
	if !got["p0"] || !got["p2"] || !got["p3"] || got["p1"] {
		t.Errorf("informer saw %v, want p0, p2, p3", got)
	}
}

// TestWatchResume: a watch from an old resourceVersion replays what it missed; a watch from
// before a compaction gets 410 Gone.
func TestWatchResume(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	cms := c.Client.CoreV1().ConfigMaps(ns)
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		cm, err := cms.Get(ctx, "w", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["n"] = fmt.Sprint(i)
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Only "w": the root CA publisher adds kube-root-ca.crt to the new namespace at its own time.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, FieldSelector: "metadata.name=w"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for len(got) < 4 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", got)
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				got = append(got, fmt.Sprintf("%s:%s", ev.Type, cm.Data["n"]))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("missed events: got %v", got)
		}
	}
	want := []string{"MODIFIED:1", "MODIFIED:2", "MODIFIED:3", "DELETED:3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replayed events %v, want %v", got, want)
	}

}

// TestWatchCompacted: a watch from a version etcd has compacted away, and that the restarted
// API server's watch cache no longer holds, gets 410 Gone; the client then relists.
func TestWatchCompacted(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	first := framework.Start(t, framework.Options{DataDir: dir})
	ns := newNamespace(t, ctx, first.Client)
	old, err := first.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "filler-"}}
		if _, err := first.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: first.EtcdServers, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	etcd.Close()
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := framework.Start(t, framework.Options{DataDir: dir})
	w, err := second.Client.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion})
	if err == nil {
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Error {
				t.Fatalf("watch from a compacted version: got %s, want an error event", ev.Type)
			}
			err = apierrors.FromObject(ev.Object)
		case <-time.After(10 * time.Second):
			t.Fatal("watch from a compacted version: no event")
		}
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from a compacted version: %v, want 410 Gone", err)
	}
}

// TestWatchBookmarks: a watch that asks for bookmarks gets them.
func TestWatchBookmarks(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	// The watch cache sends a bookmark about once a minute; an initial-events-end bookmark
	// comes at once when asked with sendInitialEvents, which this watch does.
	w2, err := c.Client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{
		AllowWatchBookmarks:  true,
		SendInitialEvents:    ptrTo(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	for {
		select {
		case ev := <-w2.ResultChan():
			if ev.Type == watch.Bookmark {
				ns := ev.Object.(*corev1.Namespace)
				if ns.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
					t.Errorf("bookmark without the initial-events-end annotation: %v", ns.Annotations)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("no bookmark")
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestEventsBypassWatchCache: as in kube-apiserver, events are served straight from etcd —
// no watch cache is built for either event resource — while lists and watches of them, field
// selectors included, work as before.
func TestEventsBypassWatchCache(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	events := c.Client.CoreV1().Events(ns)
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "reason=Started"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, reason := range []string{"Pulled", "Started"} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "e-"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: ns},
			Reason:         reason, Type: corev1.EventTypeNormal, Message: "m",
		}
		if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-w.ResultChan():
		if e, ok := got.Object.(*corev1.Event); got.Type != watch.Added || !ok || e.Reason != "Started" {
			t.Fatalf("watch of reason=Started: got %s %#v", got.Type, got.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch of reason=Started: no event")
	}

	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	metrics := string(raw)
	if !contains(metrics, `apiserver_watch_cache_initializations_total{group="",resource="pods"}`) {
		t.Errorf("no watch cache for pods in /metrics")
	}
	for _, group := range []string{"", "events.k8s.io"} {
		if line := fmt.Sprintf(`apiserver_watch_cache_initializations_total{group=%q,resource="events"}`, group); contains(metrics, line) {
			t.Errorf("a watch cache was built for events (%s)", line)
		}
	}
}
