package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// TestAuthentication: no certificate, 401 (but health and version stay readable); a
// certificate of the cluster CA outside system:masters, 403 for resources.
func TestAuthentication(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	caPEM, err := os.ReadFile(filepath.Join(cluster.PKIDir(c.DataDir), "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for path, want := range map[string]int{
		"/api/v1/namespaces/default/pods": 401,
		"/api":                            401,
		"/healthz":                        200,
		"/readyz":                         200,
		"/version":                        200,
	} {
		resp, err := anonymous.Get(c.Config.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without a certificate: %d, want %d", path, resp.StatusCode, want)
		}
	}

	ca, err := pki.EnsureCA(cluster.PKIDir(c.DataDir), "berth-ca")
	if err != nil {
		t.Fatal(err)
	}
	data, err := cluster.ClientKubeconfig(ca, c.Config.Host, "jane", []string{"developers"})
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	jane := kubernetes.NewForConfigOrDie(config)
	if _, err := jane.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) || !contains(err.Error(), `User "jane" cannot list resource "pods"`) {
		t.Errorf("jane listing pods: %v, want 403 naming her", err)
	}
	if _, err := jane.Discovery().ServerVersion(); err != nil {
		t.Errorf("jane reading /version: %v", err)
	}
	if _, err := jane.Discovery().ServerGroups(); err != nil {
		t.Errorf("jane reading discovery: %v", err)
	}
}
