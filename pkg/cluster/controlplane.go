// Package cluster composes berth's components into what `berth up` and `berth apiserver` run:
// the certificates and kubeconfigs in the data dir, the embedded etcd, the API server, and the
// supervised components (controllers, scheduler, node agent), each restarted when it stops;
// `berth down` (down.go) stops and cleans up what they left.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/apiserver"
	"github.com/berth-cluster/berth/pkg/cluster/etcd"
	"github.com/berth-cluster/berth/pkg/cluster/kubeconfig"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

// Config says how to run a control plane.
type Config struct {
	// DataDir holds the certificates, the kubeconfigs and the embedded etcd's data.
	DataDir string
	// Port is the API server's HTTPS port; 0 picks a free one.
	Port int
	// BindAddress is where the API server listens (all addresses when nil).
	BindAddress net.IP
	// EtcdServers are an external etcd's client URLs; empty runs etcd embedded.
	EtcdServers                           []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdClientPort is the embedded etcd's loopback client port; 0 picks a free one.
	EtcdClientPort int
	// ServiceAccounts configures service-account tokens; without a signing key file, the key
	// is DataDir/pki/sa.key, made at first start.
	ServiceAccounts apiserver.ServiceAccountConfig
	// ServiceClusterIPRange and ServiceNodePortRange are kube-apiserver's
	// --service-cluster-ip-range and --service-node-port-range ("" for the defaults).
	ServiceClusterIPRange, ServiceNodePortRange string
	// FrontProxy is kube-apiserver's --requestheader-* and --proxy-client-* flags; without
	// a CA or client certificate file, the front-proxy CA and the aggregator's client
	// certificate are DataDir/pki/front-proxy-ca.crt and front-proxy-client.crt, made at
	// first start; headers not given are kubeadm's (X-Remote-User, X-Remote-Group,
	// X-Remote-Extra-).
	FrontProxy apiserver.FrontProxyConfig
	// Components run in this process once the API server is ready (the controllers, the
	// scheduler and the node agent), each until ctx ends; one that stops is restarted.
	Components []Component
	// ComponentIdentities runs each component as its Identity, with a client certificate
	// issued from the cluster CA; false runs them all as the admin.
	ComponentIdentities bool
}

// ControlPlane is a control plane of one process.
type ControlPlane struct {
	cfg         Config
	ready       chan struct{}
	admin       *rest.Config
	etcdServers []string
}

// New returns a control plane that Run starts.
func New(cfg Config) *ControlPlane {
	return &ControlPlane{cfg: cfg, ready: make(chan struct{})}
}

// DefaultDataDir is /var/lib/berth for root, else ~/.berth.
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/berth"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".berth")
	}
	return ".berth"
}

// AdminKubeconfigPath is where the admin kubeconfig of a data dir lives.
func AdminKubeconfigPath(dataDir string) string { return filepath.Join(dataDir, "admin.kubeconfig") }

// PKIDir is where the certificates of a data dir live.
func PKIDir(dataDir string) string { return filepath.Join(dataDir, "pki") }

// Ready is closed once the API server answers /readyz and the admin kubeconfig is written.
func (cp *ControlPlane) Ready() <-chan struct{} { return cp.ready }

// EtcdServers are the client URLs of the etcd in use; valid once Ready.
func (cp *ControlPlane) EtcdServers() []string { return cp.etcdServers }

// AdminConfig is the client configuration of the cluster admin; valid once Ready.
func (cp *ControlPlane) AdminConfig() *rest.Config { return rest.CopyConfig(cp.admin) }

// Run starts everything and blocks until ctx is done or the API server or etcd fails, then
// stops them in order: the components first, then the API server drains before etcd closes.
// A component that stops is restarted with back-off, and /readyz says it is down meanwhile.
func (cp *ControlPlane) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	c := cp.cfg
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating the data dir: %w", err)
	}
	certs, err := ensureControlPlaneCerts(PKIDir(c.DataDir), c.ServiceClusterIPRange)
	if err != nil {
		return err
	}
	serviceAccounts := c.ServiceAccounts
	if serviceAccounts.SigningKeyFile == "" {
		if serviceAccounts.SigningKeyFile, _, err = pki.EnsureServiceAccountKey(PKIDir(c.DataDir)); err != nil {
			return err
		}
	}

	etcdServers := c.EtcdServers
	var embedded *etcd.Server
	if len(etcdServers) == 0 {
		embedded, err = etcd.Start(ctx, etcd.Config{DataDir: filepath.Join(c.DataDir, "etcd"), ClientPort: c.EtcdClientPort})
		if err != nil {
			return err
		}
		defer embedded.Stop()
		etcdServers = []string{embedded.Endpoint}
	}
	cp.etcdServers = etcdServers

	components := newSupervisor()
	server, err := apiserver.New(apiserver.Config{
		BindAddress:           c.BindAddress,
		Port:                  c.Port,
		ServingCertFile:       certs.servingCert,
		ServingKeyFile:        certs.servingKey,
		ClientCAFile:          certs.caFile,
		KubeletClientCertFile: certs.kubeletClientCert,
		KubeletClientKeyFile:  certs.kubeletClientKey,
		KubeletCAFile:         certs.caFile,
		EtcdServers:           etcdServers,
		EtcdCAFile:            c.EtcdCAFile,
		EtcdCertFile:          c.EtcdCertFile,
		EtcdKeyFile:           c.EtcdKeyFile,
		CompactionInterval:    5 * time.Minute,
		ReadyzChecks:          components.checks(c.Components),
		ServiceAccounts:       serviceAccounts,
		ServiceClusterIPRange: c.ServiceClusterIPRange,
		ServiceNodePortRange:  c.ServiceNodePortRange,
		FrontProxyConfig:      certs.frontProxy(c.FrontProxy),
	})
	if err != nil {
		return err
	}
	serverURL := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(server.Port))
	adminPath := AdminKubeconfigPath(c.DataDir)
	if err := writeKubeconfig(adminPath, serverURL, certs.ca, AdminIdentity.User, AdminIdentity.Groups); err != nil {
		return err
	}
	admin, err := clientcmd.BuildConfigFromFlags("", adminPath)
	if err != nil {
		return fmt.Errorf("loading %s: %w", adminPath, err)
	}
	cp.admin = admin

	// The API server outlives the components: they stop first (releasing their Leases, the
	// node agent reporting its last statuses), then it drains.
	serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	g, gctx := errgroup.WithContext(ctx)
	serverDone := make(chan struct{})
	var serverErr error
	go func() {
		serverErr = server.Run(serverCtx)
		close(serverDone)
	}()
	g.Go(func() error {
		select {
		case <-serverDone:
			if serverErr == nil {
				return errors.New("the API server stopped")
			}
			return serverErr
		case <-gctx.Done():
			return nil
		}
	})
	if embedded != nil {
		g.Go(func() error {
			select {
			case err := <-embedded.Err():
				return fmt.Errorf("etcd: %w", err)
			case <-gctx.Done():
				return nil
			}
		})
	}
	g.Go(func() error {
		if err := waitReady(gctx, admin); err != nil {
			return err
		}
		logger.Info("API server is ready", "url", serverURL, "kubeconfig", adminPath)
		close(cp.ready)
		for _, component := range c.Components {
			config, err := cp.componentConfig(component, certs.ca)
			if err != nil {
				return err
			}
			g.Go(func() error {
				components.run(gctx, component, func() *rest.Config { return rest.CopyConfig(config) },
					func() *rest.Config { return rest.CopyConfig(admin) })
				return nil
			})
		}
		return nil
	})
	err = g.Wait()
	stopServer()
	<-serverDone
	if err == nil && serverErr != nil && !errors.Is(serverErr, context.Canceled) {
		err = serverErr
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// componentConfig is the client configuration c runs with: the admin's, with c's own
// certificate when the control plane runs components as themselves. The components run in
// the API server's process and reach it over loopback, so their responses are not
// compressed, as kube-apiserver's own loopback client's are not: gzip buys nothing there,
// and each watch stream would hold a compressor at the server's end and a decompressor at
// the client's (some 140 kB a watch, and the controllers watch every resource).
func (cp *ControlPlane) componentConfig(c Component, ca *pki.CA) (*rest.Config, error) {
	config := rest.CopyConfig(cp.admin)
	if cp.cfg.ComponentIdentities && c.Identity.User != "" {
		var err error
		if config, err = identityConfig(cp.admin, PKIDir(cp.cfg.DataDir), ca, c.Identity); err != nil {
			return nil, fmt.Errorf("component %s: %w", c.Name, err)
		}
	}
	config.DisableCompression = true
	return config, nil
}

// waitReady polls /readyz until the API server says it is ready.
func waitReady(ctx context.Context, config *rest.Config) error {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		status := 0
		client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		return status == 200, nil
	})
}

// writeKubeconfig issues a client certificate for user and writes a kubeconfig with it.
func writeKubeconfig(path, server string, ca *pki.CA, user string, groups []string) error {
	data, err := ClientKubeconfig(ca, server, user, groups)
	if err != nil {
		return err
	}
	return kubeconfig.Write(path, data)
}

// ClientKubeconfig returns a kubeconfig for user in groups, with a client certificate signed
// by ca, valid for a year.
func ClientKubeconfig(ca *pki.CA, server, user string, groups []string) ([]byte, error) {
	certPEM, keyPEM, err := ca.IssueClient(user, groups, 365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("issuing a certificate for %s: %w", user, err)
	}
	return kubeconfig.Build("berth", server, ca.CertPEM, certPEM, keyPEM, user)
}
