package rootcacertpublisher

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

const rootCA = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func configMap(ns string, data map[string]string, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ConfigMapName, Annotations: annotations, ResourceVersion: "1"}, Data: data}
}

var published = configMap("ns", map[string]string{"ca.crt": rootCA}, map[string]string{DescriptionAnnotation: Description})

func terminatingRefusal() error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, ConfigMapName,
		errors.New("unable to create new content in namespace ns because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"})
	return err
}

func TestSyncNamespace(t *testing.T) {
	tests := []struct {
		name     string
		existing *corev1.ConfigMap
		writeErr error
		wantErr  bool
		// want: the verb written ("" for none) and the ConfigMap afterwards.
		wantVerb string
	}{
		{name: "a new namespace gets it", wantVerb: "create"},
		{name: "up to date", existing: published},
		{name: "changed data is put back", existing: configMap("ns", map[string]string{"ca.crt": "other"}, map[string]string{DescriptionAnnotation: Description}), wantVerb: "update"},
		{name: "an extra key is removed", existing: configMap("ns", map[string]string{"ca.crt": rootCA, "x": "y"}, map[string]string{DescriptionAnnotation: Description}), wantVerb: "update"},
		{name: "the description is put back, other annotations kept", existing: configMap("ns", map[string]string{"ca.crt": rootCA}, map[string]string{"mine": "x"}), wantVerb: "update"},
		{name: "no annotations at all", existing: configMap("ns", map[string]string{"ca.crt": rootCA}, nil), wantVerb: "update"},
		{name: "the namespace is terminating", writeErr: terminatingRefusal(), wantVerb: "create"},
		{name: "the namespace is gone", writeErr: apierrors.NewNotFound(corev1.Resource("namespaces"), "ns"), wantVerb: "create"},
		{name: "a failed create is retried", writeErr: apierrors.NewServiceUnavailable("later"), wantErr: true, wantVerb: "create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []runtime.Object{namespace("ns", corev1.NamespaceActive)}
			if tt.existing != nil {
				objects = append(objects, tt.existing.DeepCopy())
			}
			client := fake.NewClientset(objects...)
			if tt.writeErr != nil {
				client.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.writeErr
				})
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			p := NewPublisher(client, factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), []byte(rootCA))
			defer p.queue.ShutDown()
			if tt.existing != nil {
				if err := factory.Core().V1().ConfigMaps().Informer().GetIndexer().Add(tt.existing); err != nil {
					t.Fatal(err)
				}
			}
			client.ClearActions()
			err := p.syncNamespace(context.Background(), "ns")
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync: %v, want error %v", err, tt.wantErr)
			}
			var verbs []string
			for _, a := range client.Actions() {
				verbs = append(verbs, a.GetVerb())
			}
			if (tt.wantVerb == "" && len(verbs) != 0) || (tt.wantVerb != "" && (len(verbs) != 1 || verbs[0] != tt.wantVerb)) {
				t.Fatalf("API calls %v, want %q", verbs, tt.wantVerb)
			}
			if tt.writeErr != nil || tt.wantVerb == "" {
				return
			}
			cm, err := client.CoreV1().ConfigMaps("ns").Get(context.Background(), ConfigMapName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cm.Data) != 1 || cm.Data["ca.crt"] != rootCA || cm.Annotations[DescriptionAnnotation] != Description {
				t.Errorf("published %v %v", cm.Data, cm.Annotations)
			}
			if tt.existing != nil && tt.existing.Annotations["mine"] != "" && cm.Annotations["mine"] != "x" {
				t.Errorf("another annotation was dropped: %v", cm.Annotations)
			}
		})
	}
}

// TestPublisher: run with informers, the publisher fills every namespace, one added later,
// and puts back a ConfigMap that was deleted or edited; other ConfigMaps are left alone.
func TestPublisher(t *testing.T) {
	client := fake.NewClientset(namespace("a", corev1.NamespaceActive), namespace("b", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	p := NewPublisher(client, factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), []byte(rootCA))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- p.Run(ctx, 1) }()

	waitFor := func(ns, what string, cond func(*corev1.ConfigMap) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			return err == nil && cond(cm), nil
		})
		if err != nil {
			t.Fatalf("%s/%s: %s: %v", ns, ConfigMapName, what, err)
		}
	}
	isPublished := func(cm *corev1.ConfigMap) bool {
		return cm.Data["ca.crt"] == rootCA && cm.Annotations[DescriptionAnnotation] == Description
	}
	waitFor("a", "published", isPublished)
	waitFor("b", "published", isPublished)
	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace("c", corev1.NamespaceActive), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("c", "published in a new namespace", isPublished)

	if err := client.CoreV1().ConfigMaps("a").Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("a", "put back after a delete", isPublished)
	edited := configMap("b", map[string]string{"ca.crt": "forged"}, nil)
	if _, err := client.CoreV1().ConfigMaps("b").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("b", "put back after an edit", isPublished)

	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "mine"}, Data: map[string]string{"ca.crt": "mine"}}
	if _, err := client.CoreV1().ConfigMaps("a").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("a").Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if cm, _ := client.CoreV1().ConfigMaps("a").Get(context.Background(), "mine", metav1.GetOptions{}); cm.Data["ca.crt"] != "mine" {
		t.Errorf("another ConfigMap was changed: %v", cm.Data)
	}
}

// TestAPanicInOneNamespacesSyncIsRetried: a panicking sync is recovered, counted, reported
// on the namespace and retried; the other namespaces are served meanwhile.
func TestAPanicInOneNamespacesSyncIsRetried(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	orig := reconcile
	reconcile = func(p *Publisher, ctx context.Context, ns string) error {
		mu.Lock()
		calls[ns]++
		n := calls[ns]
		mu.Unlock()
		if ns == "bad" && n <= 2 {
			var cm *corev1.ConfigMap
			_ = cm.Name // a controller bug: nil dereference
		}
		return orig(p, ctx, ns)
	}
	t.Cleanup(func() { reconcile = orig })

	client := fake.NewClientset(namespace("bad", corev1.NamespaceActive), namespace("good", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	p := NewPublisher(client, factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), []byte(rootCA))
	recorder := events.NewFakeRecorder(10)
	p.Recorder = recorder
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- p.Run(ctx, 2) }()
	for _, ns := range []string{"good", "bad"} {
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("namespace %s did not get %s: %v", ns, ConfigMapName, err)
		}
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total = %v, want %v", got, before+2)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync internal error in controller/root-ca-cert-publisher: recovered from panic") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event for the panics")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
