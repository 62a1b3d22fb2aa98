package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

type countingAuthenticator struct{ calls int }

func (c *countingAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	c.calls++
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: string(req.TLS.PeerCertificates[0].Raw)}}, true, nil
}

func requestWithCert(raw string, notAfter time.Time) *http.Request {
	return &http.Request{TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Raw: []byte(raw), NotAfter: notAfter}}}}
}

func TestCachedCertAuthenticator(t *testing.T) {
	now := time.Now()
	delegate := &countingAuthenticator{}
	c := newCachedCertAuthenticator(delegate)
	c.now = func() time.Time { return now }
	far := now.Add(time.Hour)

	for i := 0; i < 3; i++ {
		r, ok, err := c.AuthenticateRequest(requestWithCert("alice", far))
		if !ok || err != nil || r.User.GetName() != "alice" {
			t.Fatalf("alice: %v %v %v", r, ok, err)
		}
		r.User = &user.DefaultInfo{Name: "changed by a later authenticator"}
	}
	if delegate.calls != 1 {
		t.Errorf("verified %d times, want once", delegate.calls)
	}
	if r, _, _ := c.AuthenticateRequest(requestWithCert("bob", far)); r.User.GetName() != "bob" || delegate.calls != 2 {
		t.Errorf("another certificate: %v after %d calls", r.User.GetName(), delegate.calls)
	}
	if _, ok, _ := c.AuthenticateRequest(&http.Request{}); ok || delegate.calls != 3 {
		t.Error("a request without a certificate must go to the delegate and fail")
	}
	now = now.Add(certCacheTTL + time.Second)
	c.AuthenticateRequest(requestWithCert("alice", far.Add(time.Hour)))
	if delegate.calls != 4 {
		t.Errorf("after the TTL: %d calls, want a fresh verification", delegate.calls)
	}
	soon := now.Add(time.Second)
	c.AuthenticateRequest(requestWithCert("carol", soon))
	now = now.Add(2 * time.Second)
	c.AuthenticateRequest(requestWithCert("carol", soon))
	if delegate.calls != 6 {
		t.Errorf("an expired certificate was trusted from the cache (%d calls)", delegate.calls)
	}
}
