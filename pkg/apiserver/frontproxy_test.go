package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"maps"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/util/cert"
)

func testCA(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name}, key)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cert.EncodeCertificates(c)
	if err != nil {
		t.Fatal(err)
	}
	return pem
}

// TestAuthenticationInfoMerge: the ConfigMap keeps what other API servers published and adds
// this one's CAs and headers, each once, as kube-apiserver's controller does.
func TestAuthenticationInfoMerge(t *testing.T) {
	clientCA, proxyCA, otherCA := testCA(t, "client"), testCA(t, "proxy"), testCA(t, "other")
	static := func(b []byte) dynamiccertificates.CAContentProvider {
		p, err := dynamiccertificates.NewStaticCAContent("test", b)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	info := authenticationInfo{
		clientCA: static(clientCA),
		requestHeader: &authenticatorfactory.RequestHeaderConfig{
			UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
			GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
			ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
			AllowedClientNames:  headerrequest.StaticStringSlice{"front-proxy-client"},
			CAContentProvider:   static(proxyCA),
		},
	}
	now := time.Now()
	fresh, err := info.merge(nil, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"client-ca-file":                     string(clientCA),
		"requestheader-client-ca-file":       string(proxyCA),
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
		"requestheader-allowed-names":        `["front-proxy-client"]`,
	}
	if !maps.Equal(fresh, want) {
		t.Errorf("fresh: %v, want %v", fresh, want)
	}
	// Written again: nothing changes.
	again, err := info.merge(fresh, now)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(again, fresh) {
		t.Errorf("merged over itself: %v, want %v", again, fresh)
	}
	// Another API server's values stay, first.
	other := map[string]string{
		"client-ca-file":                     string(otherCA),
		"requestheader-client-ca-file":       string(otherCA) + string(proxyCA),
		"requestheader-username-headers":     `["X-Other-User"]`,
		"requestheader-group-headers":        `[]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
		"requestheader-allowed-names":        `["aggregator"]`,
	}
	merged, err := info.merge(other, now)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{
		"client-ca-file":                     string(otherCA) + string(clientCA),
		"requestheader-client-ca-file":       string(otherCA) + string(proxyCA),
		"requestheader-username-headers":     `["X-Other-User","X-Remote-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
		"requestheader-allowed-names":        `["aggregator","front-proxy-client"]`,
	}
	if !maps.Equal(merged, want) {
		t.Errorf("merged: %v, want %v", merged, want)
	}
	// Without a front proxy, and none published: only the client CA.
	info.requestHeader = nil
	plain, err := info.merge(nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(plain, map[string]string{"client-ca-file": string(clientCA)}) {
		t.Errorf("without a front proxy: %v", plain)
	}
}
