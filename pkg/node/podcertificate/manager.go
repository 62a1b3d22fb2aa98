// Package podcertificate gives the volume manager the credentials of projected volumes'
// podCertificate sources (the kubelet's pkg/kubelet/podcertificate): for each source of each
// pod, a private key of the source's keyType made on the node, and the certificate chain a
// signer issued for it through a certificates.k8s.io/v1 PodCertificateRequest.
//
// A source is tracked from the first time its volume is set up: the manager makes a key, and
// creates a PodCertificateRequest (signer, pod, service account and node names and UIDs,
// maxExpirationSeconds, the stub PKCS#10 request that proves the key, the source's
// userAnnotations) owned by the pod; it then follows the request through an informer of the
// node's requests (fieldSelector spec.nodeName, what the node authorizer grants) until the
// signer sets a condition: Issued gives the credentials, Denied and Failed are final and the
// volume's setup fails with their reason. Once beginRefreshAt (plus up to 5 min of jitter)
// has passed, a new key and request are made, and the old credentials serve until the new
// ones are issued; the volume resync writes them to the pod's files. A minutely pass looks
// at every source, so that refreshes happen without any event.
//
// Each source's state is a value changed only by next (state.go), which does no I/O; the
// workers here carry out its decisions.
package podcertificate

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// refreshPeriod is how often every tracked source is looked at; workers is how many sources
// are handled at once (an RSA 4096 key takes a while to make).
const (
	refreshPeriod = time.Minute
	workers       = 4
)

// Key names one podCertificate source of one pod.
type Key struct {
	Namespace, PodName string
	PodUID             types.UID
	Volume             string
	SourceIndex        int
}

// tracked is a tracked source: what it asks for and where it stands.
type tracked struct {
	pod    *v1.Pod
	source v1.PodCertificateProjection
	state  state
}

// Manager issues and refreshes the credentials of the node's podCertificate sources. Run
// runs its workers and its informer; Gets before Run wait for nothing and answer "not issued
// yet".
type Manager struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	nodeName string
	clock    clock.PassiveClock
	// jitter spreads refreshes and abandonments (up to 5 min, as the kubelet's).
	jitter func() time.Duration

	mu       sync.Mutex
	ctx      context.Context                           // Run's; nil when Run is not running
	queue    workqueue.TypedRateLimitingInterface[Key] // Run's
	informer cache.SharedIndexInformer
	lister   certlisters.PodCertificateRequestLister
	nodeUID  types.UID
	records  map[Key]*tracked
	// changed is closed (and replaced) whenever a state changes, for Get's waiters.
	changed chan struct{}
	wg      sync.WaitGroup
}

// NewManager returns a Manager for the pods of nodeName; clk may be nil (the real clock).
func NewManager(client kubernetes.Interface, recorder record.EventRecorder, nodeName string, clk clock.PassiveClock) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{
		client:   client,
		recorder: recorder,
		nodeName: nodeName,
		clock:    clk,
		jitter:   func() time.Duration { return time.Duration(mathrand.Int64N(int64(5 * time.Minute))) },
		records:  map[Key]*tracked{},
		changed:  make(chan struct{}),
	}
}

// Run handles the sources until ctx is done: the workers, and every refreshPeriod a look at
// each source. The informer of the node's requests starts with the first source.
func (m *Manager) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[Key]())
	queueAll := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for k := range m.records {
			q.Add(k)
		}
	}
	m.mu.Lock()
	m.ctx, m.queue = ctx, q
	if len(m.records) > 0 {
		m.startInformer()
	}
	m.mu.Unlock()
	queueAll()
	defer func() {
		m.mu.Lock()
		m.ctx, m.queue, m.informer, m.lister = nil, nil, nil, nil
		m.mu.Unlock()
		cancel()
		q.ShutDown()
		m.wg.Wait()
	}()
	for range workers {
		m.wg.Go(func() {
			for m.processNext(ctx, q) {
			}
		})
	}
	t := time.NewTicker(refreshPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			queueAll()
		}
	}
}

// startInformer runs the informer of the node's PodCertificateRequests (m.mu held, Run
// running): a change to one of a pod's requests looks at that pod's sources again.
func (m *Manager) startInformer() {
	if m.informer != nil || m.ctx == nil {
		return
	}
	factory := informers.NewSharedInformerFactoryWithOptions(m.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", m.nodeName).String()
	}))
	inf := factory.Certificates().V1().PodCertificateRequests()
	m.informer, m.lister = inf.Informer(), inf.Lister()
	queuePod := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if pcr, ok := obj.(*certificatesv1.PodCertificateRequest); ok {
			m.queuePod(pcr.Spec.PodUID)
		}
	}
	_, _ = m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    queuePod,
		UpdateFunc: func(_, obj any) { queuePod(obj) },
		DeleteFunc: queuePod,
	})
	ctx, informer := m.ctx, m.informer
	m.wg.Go(func() { informer.RunWithContext(ctx) })
}

// queuePod queues the tracked sources of the pod.
func (m *Manager) queuePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.queue == nil {
		return
	}
	for k := range m.records {
		if k.PodUID == uid {
			m.queue.Add(k)
		}
	}
}

// GetPodCertificateCredentialBundle is the PEM private key and certificate chain of the
// pod's source sourceIndex of volume volumeName, tracking the source if it is new. Until the
// first credentials are issued it waits up to wait for them, then answers that they are not
// issued yet; a denied or failed request is an error with the signer's reason.
func (m *Manager) GetPodCertificateCredentialBundle(ctx context.Context, pod *v1.Pod, volumeName string, sourceIndex int, source *v1.PodCertificateProjection, wait time.Duration) (key, chain []byte, err error) {
	k := Key{Namespace: pod.Namespace, PodName: pod.Name, PodUID: pod.UID, Volume: volumeName, SourceIndex: sourceIndex}
	m.mu.Lock()
	rec, ok := m.records[k]
	if !ok {
		rec = &tracked{source: *source.DeepCopy()}
		m.records[k] = rec
		m.startInformer()
		if m.queue != nil {
			m.queue.Add(k)
		}
	}
	rec.pod = pod
	running := m.ctx != nil
	m.mu.Unlock()
	if !running {
		wait = 0
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		m.mu.Lock()
		key, chain, err = rec.state.credentials()
		changed := m.changed
		m.mu.Unlock()
		if err != errNotIssued || wait <= 0 {
			return key, chain, err
		}
		select {
		case <-changed:
		case <-timeout:
			return nil, nil, err
		case <-ctx.Done():
			return nil, nil, err
		}
	}
}

// ForgetPod drops the pod's sources: its containers are gone.
func (m *Manager) ForgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.records {
		if k.PodUID == uid {
			delete(m.records, k)
		}
	}
}

func (m *Manager) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key]) bool {
	k, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(k)
	// One source's panic is that source's error, retried with back-off: it must not end the
	// node agent (a signer's odd certificate chain, say).
	if err := panics.Call(ctx, "podcertificate", func() error { return m.handle(ctx, k) }); err != nil {
		klog.FromContext(ctx).Error(err, "Handling a podCertificate projected volume source failed", "pod", klog.KRef(k.Namespace, k.PodName), "volume", k.Volume, "sourceIndex", k.SourceIndex)
		q.AddRateLimited(k)
		return true
	}
	q.Forget(k)
	return true
}

// handle carries out next's decision for the source: events, and a new request.
func (m *Manager) handle(ctx context.Context, k Key) error {
	m.mu.Lock()
	rec, ok := m.records[k]
	if !ok {
		m.mu.Unlock()
		return nil
	}
	cur, pod, source, lister, informer := rec.state, rec.pod, rec.source, m.lister, m.informer
	m.mu.Unlock()

	var pcr *certificatesv1.PodCertificateRequest
	if cur.pending != "" {
		if informer == nil || !informer.HasSynced() {
			return fmt.Errorf("waiting for the PodCertificateRequest informer to sync")
		}
		got, err := lister.PodCertificateRequests(k.Namespace).Get(cur.pending)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("while getting PodCertificateRequest %q: %w", k.Namespace+"/"+cur.pending, err)
		}
		pcr = got
	}
	s, d := next(cur, m.clock.Now(), pcr, m.jitter())
	for _, e := range d.events {
		m.recorder.Event(pod, v1.EventTypeWarning, e.reason, e.message)
	}
	if d.request {
		key, pcr, err := m.createRequest(ctx, pod, &source)
		if err != nil {
			m.store(k, s)
			return fmt.Errorf("while creating PodCertificateRequest: %w", err)
		}
		s = s.requested(pcr.Name, key, pcr.CreationTimestamp.Time, m.jitter())
		klog.FromContext(ctx).V(4).Info("PodCertificateRequest created", "pod", klog.KObj(pod), "request", klog.KObj(pcr))
	}
	m.store(k, s)
	return d.err
}

// store sets the source's state, unless its pod was forgotten meanwhile, and wakes Get's
// waiters.
func (m *Manager) store(k Key, s state) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec, ok := m.records[k]; ok {
		rec.state = s
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// createRequest makes a key of the source's type and a PodCertificateRequest for it.
func (m *Manager) createRequest(ctx context.Context, pod *v1.Pod, source *v1.PodCertificateProjection) ([]byte, *certificatesv1.PodCertificateRequest, error) {
	sa, err := m.client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, pod.Spec.ServiceAccountName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("while fetching service account: %w", err)
	}
	nodeUID, err := m.getNodeUID(ctx)
	if err != nil {
		return nil, nil, err
	}
	priv, stub, err := generateKeyAndProof(source.KeyType)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating keypair: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("while marshaling key to PKCS#8: %w", err)
	}
	pcr := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       pod.Namespace,
			GenerateName:    "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                source.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        pod.Spec.ServiceAccountName,
			ServiceAccountUID:         sa.UID,
			NodeName:                  types.NodeName(m.nodeName),
			NodeUID:                   nodeUID,
			MaxExpirationSeconds:      source.MaxExpirationSeconds,
			StubPKCS10Request:         stub,
			UnverifiedUserAnnotations: source.UserAnnotations,
		},
	}
	pcr, err = m.client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(ctx, pcr, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), pcr, nil
}

// getNodeUID is the UID of the node's Node, read once.
func (m *Manager) getNodeUID(ctx context.Context) (types.UID, error) {
	m.mu.Lock()
	uid := m.nodeUID
	m.mu.Unlock()
	if uid != "" {
		return uid, nil
	}
	node, err := m.client.CoreV1().Nodes().Get(ctx, m.nodeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("while getting node %q: %w", m.nodeName, err)
	}
	m.mu.Lock()
	m.nodeUID = node.UID
	m.mu.Unlock()
	return node.UID, nil
}

// generateKeyAndProof makes a private key of keyType and a stub PKCS#10 request signed by it
// (the proof of possession the API server checks).
func generateKeyAndProof(keyType string) (crypto.Signer, []byte, error) {
	var priv crypto.Signer
	var err error
	switch keyType {
	case "RSA3072":
		priv, err = rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		priv, err = rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		priv, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("unknown key type %q", keyType)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("while generating %s key: %w", keyType, err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, priv)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating stub PKCS#10 request: %w", err)
	}
	return priv, stub, nil
}
