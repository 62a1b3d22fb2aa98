// Package clustertrustbundle gives the volume manager the trust anchors of projected volumes'
// clusterTrustBundle sources (the kubelet's pkg/kubelet/clustertrustbundle): the PEM
// certificates of one certificates.k8s.io/v1 ClusterTrustBundle by name, or of every bundle
// of a signer whose labels match a selector, joined into one file.
//
// The bundles come from one informer of all ClusterTrustBundles (the node authorizer lets a
// node get, list and watch them), started at the first request, since most nodes never mount
// one; the volume resync asks again every period, so a changed, added or deleted bundle
// reaches the pods' files within a period. Before Run, or while the informer has not listed,
// a request reads the API server instead.
//
// The answer is normalized as the kubelet normalizes it: the certificates of the matching
// bundles are decoded, deduplicated, and written back as CERTIFICATE blocks (headers and
// other text dropped). The kubelet shuffles that list once per cached answer; berth sorts it
// by the certificates' DER, so that the file is the same from one resync to the next and is
// only rewritten when the bundles change.
package clustertrustbundle

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
)

// maxLabelSelectorLength is the kubelet's limit on a selector's text.
const maxLabelSelectorLength = 100 * 1024

// syncTimeout is how long a request waits for the informer's first list before it reads the
// API server instead.
const syncTimeout = 5 * time.Second

// Manager answers the trust anchors of clusterTrustBundle sources. Run owns the informer.
type Manager struct {
	client kubernetes.Interface

	mu       sync.Mutex
	ctx      context.Context // Run's; nil when Run is not running
	informer cache.SharedIndexInformer
	lister   certlisters.ClusterTrustBundleLister
	wg       sync.WaitGroup
}

// NewManager returns a Manager reading through client.
func NewManager(client kubernetes.Interface) *Manager {
	return &Manager{client: client}
}

// Run lets requests start the informer, until ctx is done; then it stops the informer and
// waits for it.
func (m *Manager) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	<-ctx.Done()
	cancel()
	m.mu.Lock()
	m.ctx, m.informer, m.lister = nil, nil, nil
	m.mu.Unlock()
	m.wg.Wait()
}

// bundles is a source of ClusterTrustBundles: the informer's lister or the API server.
type bundles interface {
	get(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error)
	list(ctx context.Context, selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error)
}

// source is the informer's lister once it has listed, else the API server.
func (m *Manager) source(ctx context.Context) bundles {
	m.mu.Lock()
	if m.ctx != nil && m.informer == nil {
		factory := informers.NewSharedInformerFactory(m.client, 0)
		inf := factory.Certificates().V1().ClusterTrustBundles()
		m.informer, m.lister = inf.Informer(), inf.Lister()
		runCtx, informer := m.ctx, m.informer
		m.wg.Go(func() { informer.RunWithContext(runCtx) })
	}
	informer, lister := m.informer, m.lister
	m.mu.Unlock()
	if informer == nil {
		return apiBundles{m.client}
	}
	if !informer.HasSynced() {
		waitCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		if !cache.WaitForCacheSync(waitCtx.Done(), informer.HasSynced) {
			return apiBundles{m.client}
		}
	}
	return listerBundles{lister}
}

// GetTrustAnchorsByName is the normalized certificates of the bundle name; a missing bundle
// is an empty answer when allowMissing, else an error.
func (m *Manager) GetTrustAnchorsByName(ctx context.Context, name string, allowMissing bool) ([]byte, error) {
	ctb, err := m.source(ctx).get(ctx, name)
	if apierrors.IsNotFound(err) && allowMissing {
		return []byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
	}
	return Normalize([]*certificatesv1.ClusterTrustBundle{ctb}), nil
}

// GetTrustAnchorsBySigner is the normalized certificates of the bundles of signerName whose
// labels match selector (nil matches none, empty matches all). No matching bundle is an empty
// answer when allowMissing, else an error.
func (m *Manager) GetTrustAnchorsBySigner(ctx context.Context, signerName string, selector *metav1.LabelSelector, allowMissing bool) ([]byte, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("while parsing label selector: %w", err)
	}
	if n := len(sel.String()); n > maxLabelSelectorLength {
		return nil, fmt.Errorf("label selector length (%d) is larger than %d", n, maxLabelSelectorLength)
	}
	all, err := m.source(ctx).list(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("while listing ClusterTrustBundles matching label selector %v: %w", selector, err)
	}
	var matched []*certificatesv1.ClusterTrustBundle
	for _, ctb := range all {
		if ctb.Spec.SignerName == signerName {
			matched = append(matched, ctb)
		}
	}
	if len(matched) == 0 {
		if allowMissing {
			return []byte{}, nil
		}
		return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
	}
	return Normalize(matched), nil
}

// Normalize is the certificates of the bundles: every PEM block decoded, the same DER kept
// once, sorted, each written as a CERTIFICATE block without headers.
func Normalize(ctbs []*certificatesv1.ClusterTrustBundle) []byte {
	var ders [][]byte
	for _, ctb := range ctbs {
		rest := []byte(ctb.Spec.TrustBundle)
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			ders = append(ders, b.Bytes)
		}
	}
	slices.SortFunc(ders, bytes.Compare)
	ders = slices.CompactFunc(ders, bytes.Equal)
	out := []byte{}
	for _, der := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return out
}

type listerBundles struct {
	l certlisters.ClusterTrustBundleLister
}

func (b listerBundles) get(_ context.Context, name string) (*certificatesv1.ClusterTrustBundle, error) {
	return b.l.Get(name)
}

func (b listerBundles) list(_ context.Context, sel labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	return b.l.List(sel)
}

type apiBundles struct{ client kubernetes.Interface }

func (b apiBundles) get(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error) {
	return b.client.CertificatesV1().ClusterTrustBundles().Get(ctx, name, metav1.GetOptions{})
}

func (b apiBundles) list(ctx context.Context, sel labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	if isNothing(sel) {
		return nil, nil
	}
	l, err := b.client.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	out := make([]*certificatesv1.ClusterTrustBundle, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}

// isNothing says whether sel is labels.Nothing() (a nil selector), whose text "" would list
// everything.
func isNothing(sel labels.Selector) bool {
	return sel.String() == "" && !sel.Matches(labels.Set{})
}
