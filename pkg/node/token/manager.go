// Package token is the node agent's service-account token manager (the kubelet's
// pkg/kubelet/token): the projected volumes of the volume manager get each pod's bound
// service-account tokens here. A token comes from the API's TokenRequest
// (serviceaccounts/<name>/token, bound to the pod by name and UID) and is cached by what was
// asked for: namespace, account, audiences, lifetime, bound object and the account's UID.
// The volume resync asks again every period; a cached token is handed back until 80 % of its
// lifetime has passed or it is 24 h old, then a new one is requested, so that the file in the
// pod is renewed well before the old token expires. When the request fails, a token that has
// not yet expired is kept. A pod's tokens are dropped when the pod goes, and expired ones by
// a minutely clean-up.
package token

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The kubelet's limits: a token older than maxTTL is renewed whatever its lifetime, the cache
// drops expired tokens every gcPeriod, and renewals are spread by up to maxJitter so that the
// pods of a node do not all ask at once.
const (
	maxTTL    = 24 * time.Hour
	gcPeriod  = time.Minute
	maxJitter = 10 * time.Second
)

// refreshPercent is how much of a token's lifetime is left when it is renewed: 20 %, that is,
// after 80 % has passed.
const refreshPercent = 20

// getTokenFunc asks the API for a token of the service account namespace/name.
type getTokenFunc func(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)

// Manager caches the node's service-account tokens. It is safe for concurrent use.
type Manager struct {
	getToken getTokenFunc
	clock    clock.PassiveClock

	mu    sync.Mutex
	cache map[string]entry
}

// entry is a cached token and the pod it is bound to.
type entry struct {
	tr  *authenticationv1.TokenRequest
	pod types.UID
}

// NewManager returns a Manager that requests tokens through client; clk tells when a token
// needs renewing (nil: the real clock).
func NewManager(client kubernetes.Interface, clk clock.PassiveClock) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var served atomic.Bool
	get := func(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
		out, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
		// A 404 is a missing account, or an API server without TokenRequest: tell which.
		if apierrors.IsNotFound(err) && !served.Load() {
			if tokenRequestServed(ctx, client) {
				served.Store(true)
			} else {
				return nil, fmt.Errorf("the API server does not have TokenRequest endpoints enabled")
			}
		}
		return out, err
	}
	return newManager(get, clk)
}

func newManager(get getTokenFunc, clk clock.PassiveClock) *Manager {
	return &Manager{getToken: get, clock: clk, cache: map[string]entry{}}
}

// tokenRequestServed reports whether the core API lists serviceaccounts/token.
func tokenRequestServed(ctx context.Context, client kubernetes.Interface) bool {
	resources, err := client.Discovery().ServerResourcesForGroupVersionWithContext(ctx, "v1")
	if err != nil {
		return false
	}
	for _, r := range resources.APIResources {
		if r.Name == "serviceaccounts/token" {
			return true
		}
	}
	return false
}

// GetServiceAccountToken returns a token of the service account namespace/name for tr: the
// cached one while it is fresh, a new one otherwise. If renewing fails, the cached token is
// returned as long as it has not expired.
func (m *Manager) GetServiceAccountToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := cacheKey(namespace, name, tr)
	m.mu.Lock()
	e, ok := m.cache[key]
	m.mu.Unlock()
	cached := e.tr
	if ok && !m.requiresRefresh(ctx, cached) {
		return cached, nil
	}
	fresh, err := m.getToken(ctx, namespace, name, tr)
	if err != nil {
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case m.expired(cached):
			return nil, fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		default:
			klog.FromContext(ctx).Error(err, "Couldn't update token", "cacheKey", key)
			return cached, nil
		}
	}
	if fresh.Spec.ExpirationSeconds == nil && tr.Spec.ExpirationSeconds != nil {
		// The lifetime the renewal is timed by: what was asked, if the answer does not say.
		fresh = fresh.DeepCopy()
		fresh.Spec.ExpirationSeconds = tr.Spec.ExpirationSeconds
	}
	e = entry{tr: fresh}
	if tr.Spec.BoundObjectRef != nil && tr.Spec.BoundObjectRef.Kind == "Pod" {
		e.pod = tr.Spec.BoundObjectRef.UID
	}
	m.mu.Lock()
	m.cache[key] = e
	m.mu.Unlock()
	return fresh, nil
}

// DeleteServiceAccountToken drops the tokens bound to the pod.
func (m *Manager) DeleteServiceAccountToken(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.cache {
		if e.pod == podUID {
			delete(m.cache, k)
		}
	}
}

// Run drops expired tokens every minute until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(gcPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.cleanup()
		}
	}
}

func (m *Manager) cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.cache {
		if m.expired(e.tr) {
			delete(m.cache, k)
		}
	}
}

func (m *Manager) expired(tr *authenticationv1.TokenRequest) bool {
	return m.clock.Now().After(tr.Status.ExpirationTimestamp.Time)
}

// requiresRefresh reports whether tr is older than maxTTL or in the last fifth of its
// lifetime, each moved earlier by a random jitter. A token whose lifetime is unknown is kept.
func (m *Manager) requiresRefresh(ctx context.Context, tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		klog.FromContext(ctx).Error(nil, "Expiration seconds was nil for token request", "serviceAccount", tr.Name, "boundObjectRef", tr.Spec.BoundObjectRef)
		return false
	}
	now := m.clock.Now()
	lifetime := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	issued := exp.Add(-lifetime)
	jitter := time.Duration(rand.Float64()*maxJitter.Seconds()) * time.Second
	if now.After(issued.Add(maxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-lifetime*refreshPercent/100 - jitter))
}

// cacheKey is what makes two requests ask for the same token. The service account's UID,
// when the request names one, keeps a recreated account from getting its predecessor's.
func cacheKey(namespace, name string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v/%q", name, namespace, tr.Spec.Audiences, exp, ref, tr.UID)
}
