// Package kubeconfig writes the kubeconfig files through which kubectl,
// client-go and berth's own components reach a berth cluster with a client
// certificate from berth's CA (package pki). `berth up` writes the admin
// kubeconfig and those of its components, `berth kubeconfig` prints one for
// a user, and node join writes the node's own. Every file is self-contained:
// the CA, the certificate and the key are embedded, so it can be copied to
// another machine as it is.
package kubeconfig

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Build returns a kubeconfig with one cluster and one context, both named
// clusterName, and one user, userName, authenticating with certPEM and
// keyPEM to server, which is trusted through caPEM. The context is the
// current one.
func Build(clusterName, server string, caPEM, certPEM, keyPEM []byte, userName string) ([]byte, error) {
	switch {
	case clusterName == "":
		return nil, errors.New("building kubeconfig: cluster name is empty")
	case userName == "":
		return nil, errors.New("building kubeconfig: user name is empty")
	case len(caPEM) == 0:
		return nil, errors.New("building kubeconfig: no CA certificate")
	case len(certPEM) == 0 || len(keyPEM) == 0:
		return nil, errors.New("building kubeconfig: no client certificate and key")
	}
	// A client certificate is only ever presented over TLS.
	if u, err := url.Parse(server); err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("building kubeconfig: server %q is not an https:// URL", server)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	}
	cfg.Contexts[clusterName] = &clientcmdapi.Context{
		Cluster:  clusterName,
		AuthInfo: userName,
	}
	cfg.CurrentContext = clusterName

	// The same checks kubectl makes when it loads the file, so a broken file
	// is never written.
	if err := clientcmd.Validate(*cfg); err != nil {
		return nil, fmt.Errorf("building kubeconfig: %w", err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return data, nil
}

// Write replaces the file at path with kubeconfig, readable by its owner
// only since it holds a private key. The file is replaced atomically, so a
// kubectl running meanwhile reads the old file or the new, never half of one.
// A missing parent directory is created, also private.
func Write(path string, kubeconfig []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating directory for kubeconfig: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	// Removing after a successful rename fails harmlessly.
	defer os.Remove(tmp.Name())

	// CreateTemp makes the file 0600 already; Chmod states the intent, and
	// holds should that default ever change.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if _, err := tmp.Write(kubeconfig); err != nil {
		tmp.Close()
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
