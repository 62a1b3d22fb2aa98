package e2e

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestNodeCertificateVolumes: a projected volume's clusterTrustBundle sources (by signer and
// labels, deduplicated and sorted; by name; optional and missing) and its podCertificate
// source (a key made on the node, a PodCertificateRequest bound to the pod, signed by a
// signer goroutine of this test) reach the pod's files; a bundle's change reaches its file;
// a non-optional source that matches nothing holds the container back and says why.
func TestNodeCertificateVolumes(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(config)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	signer := "e2e.berth.dev/" + ns
	prefix := strings.ReplaceAll(signer, "/", ":") + ":"
	caKey, caCert, caDER := testCA(t, "signer-"+ns)
	certs := make([]string, 4)
	for i := range certs {
		_, _, der := testCA(t, fmt.Sprintf("root%d-%s", i, ns))
		certs[i] = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	bundles := []*certificatesv1.ClusterTrustBundle{
		{ObjectMeta: metav1.ObjectMeta{Name: prefix + "a", Labels: map[string]string{"alive": "true"}}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: certs[0]}},
		// cert 0 again: the file has it once.
		{ObjectMeta: metav1.ObjectMeta{Name: prefix + "b", Labels: map[string]string{"alive": "true"}}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: certs[1] + certs[0]}},
		{ObjectMeta: metav1.ObjectMeta{Name: prefix + "c", Labels: map[string]string{"alive": "false"}}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: certs[2]}},
		{ObjectMeta: metav1.ObjectMeta{Name: ns + "-plain"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: certs[3]}},
		// The signer's own CA, for its pods to trust.
		{ObjectMeta: metav1.ObjectMeta{Name: prefix + "ca", Labels: map[string]string{"ca": "true"}}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))}},
	}
	for _, b := range bundles {
		if _, err := client.CertificatesV1().ClusterTrustBundles().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := b.Name
		t.Cleanup(func() {
			_ = client.CertificatesV1().ClusterTrustBundles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	go runTestSigner(ctx, t, client, ns, signer, caKey, caCert)

	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: certs}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %[1]s
    command: ["sleep", "3600"]
    volumeMounts: [{name: tls, mountPath: /etc/tls}]
  volumes:
  - name: tls
    projected:
      sources:
      - clusterTrustBundle: {signerName: %[2]s, labelSelector: {matchLabels: {alive: "true"}}, path: alive.pem}
      - clusterTrustBundle: {name: %[3]s-plain, path: plain.pem}
      - clusterTrustBundle: {name: nowhere-%[3]s, optional: true, path: missing.pem}
      - clusterTrustBundle: {signerName: %[2]s, labelSelector: {matchLabels: {ca: "true"}}, path: ca.pem}
      - podCertificate:
          signerName: %[2]s
          keyType: ECDSAP256
          credentialBundlePath: creds.pem
          keyPath: key.pem
          certificateChainPath: chain.pem
          userAnnotations: {e2e.berth.dev/path: /custom}
`, image, signer, ns), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "certs", "Running")
	sh := func(script string) string {
		t.Helper()
		return c.must(t, "exec", "certs", "-n", ns, "--", "sh", "-c", script)
	}

	// The bundles: sorted by DER, each certificate once.
	if got, want := sh("cat /etc/tls/alive.pem"), normalized(certs[0], certs[1]); got != want {
		t.Errorf("alive.pem:\n%s\nwant\n%s", got, want)
	}
	if got := sh("cat /etc/tls/plain.pem"); got != certs[3] {
		t.Errorf("plain.pem:\n%s\nwant\n%s", got, certs[3])
	}
	if got := sh("cat /etc/tls/missing.pem; stat -L -c %a /etc/tls/alive.pem"); got != "644\n" {
		t.Errorf("missing.pem and alive.pem's mode: %q, want an empty file and 644", got)
	}

	// The credentials: the key first, then the chain the signer issued for that key, which
	// the trust bundle verifies; the key lives on tmpfs.
	creds, key, chain := sh("cat /etc/tls/creds.pem"), sh("cat /etc/tls/key.pem"), sh("cat /etc/tls/chain.pem")
	if creds != key+chain {
		t.Errorf("creds.pem is not key.pem then chain.pem:\n%s", creds)
	}
	block, rest := pem.Decode([]byte(creds))
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("creds.pem does not start with a private key:\n%s", creds)
	}
	priv, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := priv.(*ecdsa.PrivateKey); !ok {
		t.Errorf("the key is a %T, want ECDSA", priv)
	}
	block, _ = pem.Decode(rest)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("creds.pem has no certificate after the key:\n%s", creds)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(priv.(crypto.Signer).Public()) {
		t.Error("the certificate is not for the pod's key")
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].Path != "/custom" {
		t.Errorf("the certificate's URIs are %v, want the path of the source's userAnnotations", leaf.URIs)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(sh("cat /etc/tls/ca.pem"))) {
		t.Error("ca.pem has no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("the certificate does not verify against the signer's bundle: %v", err)
	}
	if got := sh("grep ' /etc/tls ' /proc/mounts"); !strings.Contains(got, " tmpfs ") {
		t.Errorf("the volume with the key is not on tmpfs: %q", got)
	}
	// The request the node made: for this pod, its account, its node.
	pcrs, err := client.CertificatesV1().PodCertificateRequests(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pcrs.Items) != 1 {
		t.Fatalf("PodCertificateRequests: %v, %v; want one", pcrs, err)
	}
	pod := c.jsonpath(t, ns, "pod/certs", "{.metadata.uid} {.spec.nodeName} {.spec.serviceAccountName}")
	spec := pcrs.Items[0].Spec
	if got := fmt.Sprintf("%s %s %s", spec.PodUID, spec.NodeName, spec.ServiceAccountName); got != pod || spec.ServiceAccountUID == "" || spec.NodeUID == "" || *spec.MaxExpirationSeconds != 86400 {
		t.Errorf("the request's spec %+v does not match the pod (%s)", spec, pod)
	}

	// A bundle that comes to match reaches the file.
	c.must(t, "label", "clustertrustbundle", prefix+"c", "alive=true", "--overwrite")
	want := normalized(certs[0], certs[1], certs[2])
	eventually(t, 90*time.Second, "the bundle's change to reach the volume", func() bool {
		if sh("cat /etc/tls/alive.pem") == want {
			return true
		}
		time.Sleep(time.Second)
		return false
	})

	// A non-optional source that matches nothing: the container waits, and says why.
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: nobundle}
spec:
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    volumeMounts: [{name: v, mountPath: /etc/v}]
  volumes:
  - name: v
    projected: {sources: [{clusterTrustBundle: {signerName: %s, labelSelector: {matchLabels: {alive: unknown}}, path: b.pem}}]}
`, image, signer), "apply", "-n", ns, "-f", "-")
	c.waitStatusColumn(t, ns, "nobundle", "CreateContainerConfigError")
	msg := c.jsonpath(t, ns, "pod/nobundle", "{.status.containerStatuses[0].state.waiting.message}")
	if !strings.Contains(msg, `MountVolume.SetUp failed for volume "v" : combination of signerName and labelSelector matched zero ClusterTrustBundles`) {
		t.Errorf("waiting message %q, want it to name the volume and the empty match", msg)
	}
}

// normalized is the bundle file of the PEM certificates: each once, sorted by DER.
func normalized(pems ...string) string {
	var ders [][]byte
	for _, p := range pems {
		b, _ := pem.Decode([]byte(p))
		ders = append(ders, b.Bytes)
	}
	slices.SortFunc(ders, bytes.Compare)
	ders = slices.CompactFunc(ders, bytes.Equal)
	var out bytes.Buffer
	for _, d := range ders {
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: d})
	}
	return out.String()
}

// testCA is a self-signed CA: its key, certificate and DER.
func testCA(t *testing.T, cn string) (ed25519.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return priv, cert, der
}

// runTestSigner signs the namespace's PodCertificateRequests of signer until ctx ends, as a
// signer controller would: a leaf for the request's key with a SPIFFE URI (its path from
// the e2e.berth.dev/path user annotation), for min(maxExpirationSeconds, 24 h), refreshed
// 30 min before it ends.
func runTestSigner(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, signer string, caKey ed25519.PrivateKey, ca *x509.Certificate) {
	logf := func(format string, args ...any) {
		if ctx.Err() == nil { // not once the test has ended
			t.Logf(format, args...)
		}
	}
	for ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		list, err := client.CertificatesV1().PodCertificateRequests(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			pcr := &list.Items[i]
			if pcr.Spec.SignerName != signer || pcr.Status.CertificateChain != "" {
				continue
			}
			csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
			if err != nil {
				logf("signer: %v", err)
				continue
			}
			lifetime := 24 * time.Hour
			if d := time.Duration(*pcr.Spec.MaxExpirationSeconds) * time.Second; d < lifetime {
				lifetime = d
			}
			p := path.Join("/ns", ns, "sa", pcr.Spec.ServiceAccountName)
			if v, ok := pcr.Spec.UnverifiedUserAnnotations["e2e.berth.dev/path"]; ok {
				p = v
			}
			notBefore := time.Now().Truncate(time.Second).Add(-2 * time.Minute)
			notAfter := notBefore.Add(lifetime)
			der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
				SerialNumber: big.NewInt(time.Now().UnixNano()),
				URIs:         []*url.URL{{Scheme: "spiffe", Host: "cluster.local", Path: p}},
				NotBefore:    notBefore, NotAfter: notAfter,
				KeyUsage:    x509.KeyUsageDigitalSignature,
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
			}, ca, csr.PublicKey, caKey)
			if err != nil {
				logf("signer: %v", err)
				continue
			}
			pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Signed", Message: "signed by the test", LastTransitionTime: metav1.Now()}}
			pcr.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
			pcr.Status.NotBefore = &metav1.Time{Time: notBefore}
			pcr.Status.BeginRefreshAt = &metav1.Time{Time: notAfter.Add(-30 * time.Minute)}
			pcr.Status.NotAfter = &metav1.Time{Time: notAfter}
			if _, err := client.CertificatesV1().PodCertificateRequests(ns).UpdateStatus(ctx, pcr, metav1.UpdateOptions{}); err != nil {
				logf("signer: %v", err)
			}
		}
	}
}
