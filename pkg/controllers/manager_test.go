package controllers

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

func TestOptionsWithDefaults(t *testing.T) {
	got, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.LeaseName != "berth-controller-manager" || got.LeaseNamespace != "kube-system" || !strings.Contains(got.Identity, "_") {
		t.Errorf("defaults = %+v", got)
	}
	set := Options{LeaseName: "l", LeaseNamespace: "n", Identity: "me"}
	if got, _ := set.withDefaults(); !reflect.DeepEqual(got, set) {
		t.Errorf("withDefaults() changed set options: %+v", got)
	}
}

func TestClientConfig(t *testing.T) {
	in := &rest.Config{Host: "https://example"}
	got := clientConfig(in)
	if got.ContentType != "application/vnd.kubernetes.protobuf" || got.QPS != 50 || got.UserAgent == "" {
		t.Errorf("clientConfig() = %+v", got)
	}
	if in.ContentType != "" {
		t.Error("clientConfig() modified its argument")
	}
}

func fakeControllerContext() (controllerContext, *fake.Clientset) {
	client := fake.NewClientset()
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	all, _ := enabled(nil)
	return controllerContext{client: client, metadata: metadatafake.NewSimpleMetadataClient(scheme), discovery: client.Discovery(), enabled: all}, client
}

// TestEnabled: --controllers as kube-controller-manager reads it: "*" is all, "-foo" takes
// foo out of them, a bare name runs only the named ones, and an unknown name is refused.
func TestEnabled(t *testing.T) {
	names := func(picked []int) []string {
		var out []string
		for _, i := range picked {
			out = append(out, controllers[i].name)
		}
		return out
	}
	all, err := enabled(nil)
	if err != nil || len(all) != len(controllers) {
		t.Fatalf("enabled(nil) = %v, %v; want all %d", names(all), err, len(controllers))
	}
	got, err := enabled([]string{"*", "-garbagecollector", "-job"})
	if err != nil || len(got) != len(controllers)-2 || slices.Contains(names(got), "job") || slices.Contains(names(got), "garbagecollector") {
		t.Errorf("enabled(*,-garbagecollector,-job) = %v, %v", names(got), err)
	}
	got, err = enabled([]string{"serviceaccount", "namespace"})
	if want := []string{"namespace", "serviceaccount"}; err != nil || !slices.Equal(names(got), want) {
		t.Errorf("enabled(serviceaccount,namespace) = %v, %v; want %v in the table's order", names(got), err, want)
	}
	if _, err := enabled([]string{"*", "-nosuch"}); err == nil || !strings.Contains(err.Error(), `"-nosuch" is not in the list of known controllers`) {
		t.Errorf("enabled(-nosuch) = %v", err)
	}
}

func leaseLock(client *fake.Clientset, identity string) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "berth-controller-manager"},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
}

// TestLeadOnce wins a free Lease, runs the controllers until its context ends, then stops
// them and releases the Lease so a successor need not wait for it to expire.
func TestLeadOnce(t *testing.T) {
	cc, client := fakeControllerContext()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- leadOnce(ctx, leaseLock(client, "me"), cc) }()

	getLease := func(ctx context.Context) (*coordinationv1.Lease, error) {
		return client.CoordinationV1().Leases("kube-system").Get(ctx, "berth-controller-manager", metav1.GetOptions{})
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		lease, err := getLease(ctx)
		return err == nil && ptr.Deref(lease.Spec.HolderIdentity, "") == "me", nil
	})
	if err != nil {
		t.Fatalf("the Lease was not acquired: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("leadOnce() = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("leadOnce did not return after its context ended")
	}
	lease, err := getLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != "" {
		t.Errorf("Lease still held by %q, want it released", holder)
	}
}

// TestLeadOnceWhileAnotherLeads campaigns against a Lease someone else holds: nothing runs,
// and the campaign ends with the context.
func TestLeadOnceWhileAnotherLeads(t *testing.T) {
	cc, client := fakeControllerContext()
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "berth-controller-manager"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("other"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	if _, err := client.CoordinationV1().Leases("kube-system").Create(context.Background(), held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := leadOnce(ctx, leaseLock(client, "me"), cc); err != nil {
		t.Fatalf("leadOnce() = %v", err)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "namespaces" || a.GetResource().Resource == "serviceaccounts" {
			t.Errorf("controllers ran without the Lease: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "berth-controller-manager", metav1.GetOptions{})
	if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") != "other" {
		t.Errorf("Lease = %+v, %v; want it still held by other", lease, err)
	}
}

// TestRootCABundle: the published bundle is --root-ca-file's, else the kubeconfig's CA data,
// else its CA file; a file that holds no certificate is refused with Kubernetes' message.
func TestRootCABundle(t *testing.T) {
	ca, _, err := certutil.GenerateSelfSignedCertKey("ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile, other, garbage := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other.crt"), filepath.Join(dir, "garbage")
	otherCA, _, _ := certutil.GenerateSelfSignedCertKey("other", nil, nil)
	for f, data := range map[string][]byte{caFile: ca, other: otherCA, garbage: []byte("not a certificate")} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		config rest.Config
		file   string
		want   []byte
		err    string
	}{
		{"the config's CA data", rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, "", ca, ""},
		{"the config's CA file", rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}}, "", ca, ""},
		{"--root-ca-file wins", rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, other, otherCA, ""},
		{"no CA at all", rest.Config{}, "", nil, ""},
		{"not a certificate", rest.Config{}, garbage, nil, "error parsing root-ca-file at " + garbage + ": "},
		{"missing", rest.Config{}, filepath.Join(dir, "missing"), nil, "error parsing root-ca-file at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rootCABundle(&tt.config, tt.file)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("got %q, %v", got, err)
			}
		})
	}
}

// TestStartedInformersForTheCollector: the garbage collector gets the typed informers the
// controllers started, and no informer is created for it.
func TestStartedInformersForTheCollector(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	podInformer := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	shared := startedInformers{factory}

	got, ok := shared.Informer(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"))
	if !ok || got.GetIndexer() != podInformer.GetIndexer() {
		t.Errorf("the pods' informer: %v, %v; want the started one", got, ok)
	}
	for _, r := range []struct{ resource, kind string }{{"secrets", "Secret"}, {"widgets", "Widget"}} {
		if _, ok := shared.Informer(corev1.SchemeGroupVersion.WithResource(r.resource), corev1.SchemeGroupVersion.WithKind(r.kind)); ok {
			t.Errorf("an informer of %s, which no controller started", r.resource)
		}
	}
	factory.Start(ctx.Done())
	done, stop := context.WithCancel(ctx)
	stop()
	if started := factory.WaitForCacheSyncWithContext(done).Synced; len(started) != 1 {
		t.Errorf("the factory has started %d informers, want 1 (pods): asking created one", len(started))
	}
}
