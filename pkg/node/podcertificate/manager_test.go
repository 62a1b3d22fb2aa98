package podcertificate

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// newClient is a fake API with the pod's account and node, that names created requests as the
// API server does (generateName).
func newClient() *fake.Clientset {
	client := fake.NewClientset(
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "robot", UID: "sa-uid"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}},
	)
	var n atomic.Int32
	client.PrependReactor("create", "podcertificaterequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pcr := a.(clienttesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		pcr.Name = fmt.Sprintf("%s%d", pcr.GenerateName, n.Add(1))
		pcr.CreationTimestamp = metav1.Now()
		return false, nil, nil
	})
	return client
}

// sign answers the namespace's requests until ctx ends: issued for the signer "good", denied
// for any other.
func sign(ctx context.Context, t *testing.T, client *fake.Clientset) {
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), IsCA: true, BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}
	for ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		list, err := client.CertificatesV1().PodCertificateRequests("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			pcr := &list.Items[i]
			if len(pcr.Status.Conditions) > 0 {
				continue
			}
			if pcr.Spec.SignerName != "example.com/good" {
				pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue, Reason: "Nope", Message: "unknown signer"}}
			} else {
				csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
				if err != nil {
					t.Error(err)
					return
				}
				now := time.Now()
				der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: now, NotAfter: now.Add(24 * time.Hour)}, ca, csr.PublicKey, caKey)
				if err != nil {
					t.Error(err)
					return
				}
				pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Signed"}}
				pcr.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
				pcr.Status.BeginRefreshAt = &metav1.Time{Time: now.Add(12 * time.Hour)}
				pcr.Status.NotAfter = &metav1.Time{Time: now.Add(24 * time.Hour)}
			}
			if _, err := client.CertificatesV1().PodCertificateRequests("ns").UpdateStatus(ctx, pcr, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	}
}

func TestIssue(t *testing.T) {
	client := newClient()
	recorder := record.NewFakeRecorder(10)
	m := NewManager(client, recorder, "n1", nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	go sign(ctx, t, client)
	defer func() { cancel(); <-done }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"}, Spec: v1.PodSpec{ServiceAccountName: "robot", NodeName: "n1"}}
	good := &v1.PodCertificateProjection{SignerName: "example.com/good", KeyType: "ED25519", MaxExpirationSeconds: new(int32(3600)), UserAnnotations: map[string]string{"a": "b"}}
	var key, chain []byte
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) { // Run may not have started at the first Get
		if key, chain, err = m.GetPodCertificateCredentialBundle(ctx, pod, "certs", 0, good, 5*time.Second); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(key)
	priv, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	block, _ = pem.Decode(chain)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.PublicKey.(ed25519.PublicKey).Equal(priv.(crypto.Signer).Public()) {
		t.Error("the chain is not for the key")
	}
	list, _ := client.CertificatesV1().PodCertificateRequests("ns").List(ctx, metav1.ListOptions{})
	spec := list.Items[0].Spec
	want := certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/good", PodName: "p", PodUID: "pod-uid", ServiceAccountName: "robot", ServiceAccountUID: "sa-uid",
		NodeName: "n1", NodeUID: "node-uid", MaxExpirationSeconds: good.MaxExpirationSeconds, UnverifiedUserAnnotations: map[string]string{"a": "b"}}
	spec.StubPKCS10Request = nil
	if !equality.Semantic.DeepEqual(spec, want) {
		t.Errorf("the request's spec\n%+v\nwant\n%+v", spec, want)
	}
	if owner := list.Items[0].OwnerReferences; len(owner) != 1 || owner[0].Kind != "Pod" || owner[0].UID != "pod-uid" {
		t.Errorf("the request's owners: %+v, want the pod", owner)
	}

	// A second Get answers at once, from the same credentials.
	if k2, _, err := m.GetPodCertificateCredentialBundle(ctx, pod, "certs", 0, good, 0); err != nil || string(k2) != string(key) {
		t.Errorf("a second Get: %v, another key: %v", err, string(k2) != string(key))
	}

	// A denied request fails the source, with the signer's words, and an event.
	bad := &v1.PodCertificateProjection{SignerName: "example.com/bad", KeyType: "ECDSAP256"}
	_, _, err = m.GetPodCertificateCredentialBundle(ctx, pod, "certs", 1, bad, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), `permanently denied: reason="Nope" message="unknown signer"`) {
		t.Errorf("a denied request: %v", err)
	}
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "Warning Denied") {
			t.Errorf("event %q, want a Denied warning", e)
		}
	case <-time.After(5 * time.Second):
		t.Error("no event for the denial")
	}

	// Forgotten, the pod's sources start over.
	m.ForgetPod("pod-uid")
	if _, _, err := m.GetPodCertificateCredentialBundle(ctx, pod, "certs", 0, good, 0); err == nil || err.Error() != "credential bundle is not issued yet" {
		t.Errorf("after ForgetPod: %v, want not issued yet", err)
	}
}

func TestGenerateKeyAndProof(t *testing.T) {
	for _, kt := range []string{"RSA3072", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"} {
		priv, stub, err := generateKeyAndProof(kt)
		if err != nil {
			t.Fatalf("%s: %v", kt, err)
		}
		csr, err := x509.ParseCertificateRequest(stub)
		if err != nil || csr.CheckSignature() != nil {
			t.Fatalf("%s: the stub request does not parse or verify: %v", kt, err)
		}
		if !priv.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(csr.PublicKey) {
			t.Errorf("%s: the stub request is not for the key", kt)
		}
	}
	if _, _, err := generateKeyAndProof("DSA"); err == nil {
		t.Error("an unknown key type made a key")
	}
}
