package cluster

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/client-go/util/cert"

	"github.com/berth-cluster/berth/pkg/apiserver"
)

// TestFrontProxyCerts: the control plane's certificates include a front-proxy CA of its own
// and the aggregator's client certificate from it (CN front-proxy-client), kept across
// restarts; the API server gets them, with kubeadm's headers, unless told otherwise.
func TestFrontProxyCerts(t *testing.T) {
	dir := t.TempDir()
	certs, err := ensureControlPlaneCerts(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	caPEM, clientPEM := read("front-proxy-ca.crt"), read("front-proxy-client.crt")
	if bytes.Equal(caPEM, read("ca.crt")) {
		t.Error("the front-proxy CA is the cluster CA")
	}
	pool, err := cert.NewPoolFromBytes(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := cert.ParseCertsPEM(clientPEM)
	if err != nil {
		t.Fatal(err)
	}
	if clients[0].Subject.CommonName != "front-proxy-client" {
		t.Errorf("client certificate for %q", clients[0].Subject.CommonName)
	}
	if _, err := clients[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}

	again, err := ensureControlPlaneCerts(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read("front-proxy-ca.crt"), caPEM) || !bytes.Equal(read("front-proxy-client.crt"), clientPEM) {
		t.Error("a restart replaced the front-proxy certificates")
	}

	got := again.frontProxy(apiserver.FrontProxyConfig{})
	want := apiserver.FrontProxyConfig{
		RequestHeaderClientCAFile:        filepath.Join(dir, "front-proxy-ca.crt"),
		RequestHeaderAllowedNames:        []string{"front-proxy-client"},
		RequestHeaderUsernameHeaders:     []string{"X-Remote-User"},
		RequestHeaderGroupHeaders:        []string{"X-Remote-Group"},
		RequestHeaderExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		ProxyClientCertFile:              filepath.Join(dir, "front-proxy-client.crt"),
		ProxyClientKeyFile:               filepath.Join(dir, "front-proxy-client.key"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("default front proxy: %+v, want %+v", got, want)
	}
	own := apiserver.FrontProxyConfig{RequestHeaderClientCAFile: "/elsewhere/ca.crt", RequestHeaderUsernameHeaders: []string{"X-User"}}
	if got := certs.frontProxy(own); got.RequestHeaderClientCAFile != "/elsewhere/ca.crt" || got.ProxyClientCertFile != "" ||
		len(got.RequestHeaderAllowedNames) != 0 || !reflect.DeepEqual(got.RequestHeaderUsernameHeaders, []string{"X-User"}) {
		t.Errorf("given front proxy: %+v", got)
	}
}
