package apiserver

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// certCacheTTL bounds how long a verified client certificate is trusted without verifying it
// again (a certificate's expiry ends it sooner).
const certCacheTTL = 5 * time.Minute

// certCacheSize bounds the cache; past it, the cache starts over.
const certCacheSize = 4096

// cachedCertAuthenticator remembers whom a client certificate authenticates. Verifying the
// chain costs an ECDSA signature check on every request, although the connection's TLS
// handshake already checked it and components send thousands of requests on one connection:
// a profile of the scheduler benchmark showed it as 5% of all CPU.
type cachedCertAuthenticator struct {
	delegate authenticator.Request
	now      func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]certCacheEntry
}

type certCacheEntry struct {
	response *authenticator.Response
	expires  time.Time
}

func newCachedCertAuthenticator(delegate authenticator.Request) *cachedCertAuthenticator {
	return &cachedCertAuthenticator{delegate: delegate, now: time.Now, entries: map[[sha256.Size]byte]certCacheEntry{}}
}

func (c *cachedCertAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return c.delegate.AuthenticateRequest(req)
	}
	h := sha256.New()
	for _, cert := range req.TLS.PeerCertificates {
		h.Write(cert.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	now := c.now()

	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		// A copy: the authenticators after this one replace the response's user.
		r := *e.response
		return &r, true, nil
	}
	resp, ok, err := c.delegate.AuthenticateRequest(req)
	if !ok || err != nil {
		return resp, ok, err
	}
	expires := now.Add(certCacheTTL)
	if leafExpiry := req.TLS.PeerCertificates[0].NotAfter; leafExpiry.Before(expires) {
		expires = leafExpiry
	}
	cached := *resp
	c.mu.Lock()
	if len(c.entries) >= certCacheSize {
		c.entries = map[[sha256.Size]byte]certCacheEntry{}
	}
	c.entries[key] = certCacheEntry{response: &cached, expires: expires}
	c.mu.Unlock()
	return resp, true, nil
}
