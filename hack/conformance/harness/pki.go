package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The upstream control plane's PKI, in the layout berth's own uses (DATA_DIR/pki/ca.crt and
// ca.key), so that berth node, given the same data dir, issues its node API certificate
// from the CA that kube-apiserver trusts.

// pkiCmd writes the CA, the API server's serving pair, its kubelet client pair and the
// service-account signing keys into dir.
func pkiCmd(args []string) error {
	var dir, apiIP string
	if err := flags("pki", args, func(fs *flag.FlagSet) {
		fs.StringVar(&dir, "dir", "", "directory of the PKI")
		fs.StringVar(&apiIP, "api-ip", "", "the API server's advertised address")
	}); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := newCA(dir, "ca", "berth-conformance-ca")
	if err != nil {
		return err
	}
	// kubeadm's front proxy: a CA of its own and the aggregator's client certificate
	// (kube-apiserver's --requestheader-client-ca-file and --proxy-client-cert-file).
	proxyCA, proxyCAKey, err := newCA(dir, "front-proxy-ca", "front-proxy-ca")
	if err != nil {
		return err
	}
	if err := issue(dir, "front-proxy-client", proxyCA, proxyCAKey, client("front-proxy-client")); err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	if ip := net.ParseIP(apiIP); ip != nil {
		ips = append(ips, ip)
	}
	if err := issue(dir, "apiserver", ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return err
	}
	// The identity kubeadm gives the API server towards kubelets; bootstrap binds it to
	// system:kubelet-api-admin and nothing broader.
	if err := issue(dir, "apiserver-kubelet-client", ca, caKey, client("kube-apiserver-kubelet-client")); err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// newCA writes a self-signed CA, dir/name.crt and name.key.
func newCA(dir, name, commonName string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now().Add(-5 * time.Minute)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now,
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return ca, key, writePair(dir, name, der, key)
}

// kubeconfigsCmd writes a kubeconfig for each of the run's clients into out, with client
// certificates from the CA in dir: admin (system:masters, for the suite), the scheduler, the
// node and the controllers.
func kubeconfigsCmd(args []string) error {
	var dir, server, node, out string
	if err := flags("kubeconfigs", args, func(fs *flag.FlagSet) {
		fs.StringVar(&dir, "dir", "", "directory of the PKI")
		fs.StringVar(&server, "server", "", "the API server's URL")
		fs.StringVar(&node, "node", "", "the node's name")
		fs.StringVar(&out, "out", "", "where the kubeconfigs go")
	}); err != nil {
		return err
	}
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	users := []struct {
		file, user string
		groups     []string
	}{
		{"admin", "kubernetes-admin", []string{"system:masters"}},
		{"scheduler", "system:kube-scheduler", nil},
		{"node", "system:node:" + node, []string{"system:nodes"}},
		{"controllers", "system:kube-controller-manager", nil},
	}
	for _, u := range users {
		tmpl := client(u.user)
		tmpl.Subject.Organization = u.groups
		certPEM, keyPEM, err := sign(ca, caKey, tmpl)
		if err != nil {
			return err
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["conformance"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})}
		cfg.AuthInfos[u.user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
		cfg.Contexts["conformance"] = &clientcmdapi.Context{Cluster: "conformance", AuthInfo: u.user}
		cfg.CurrentContext = "conformance"
		if err := clientcmd.WriteToFile(*cfg, filepath.Join(out, u.file+".kubeconfig")); err != nil {
			return err
		}
	}
	return nil
}

func client(user string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: user},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n
}

// sign issues tmpl (subject, names, usages) from the CA with a fresh P-256 key.
func sign(ca *x509.Certificate, caKey crypto.Signer, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now().Add(-5 * time.Minute)
	tmpl.SerialNumber = serial()
	tmpl.NotBefore, tmpl.NotAfter = now, now.Add(30*24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func issue(dir, name string, ca *x509.Certificate, caKey crypto.Signer, tmpl *x509.Certificate) error {
	certPEM, keyPEM, err := sign(ca, caKey, tmpl)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".crt"), certPEM, 0o644)
}

func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func loadCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("no PEM in %s/ca.crt or ca.key", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}
