// Package framework starts a real control plane (embedded etcd, the API server and the
// controllers) inside a test process, on free ports in a temporary data dir, so that
// integration tests drive it with client-go.
package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/controllers"
)

// Cluster is a running control plane.
type Cluster struct {
	DataDir string
	// Config is the admin's client configuration (JSON).
	Config *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// EtcdServers are the client URLs of the cluster's etcd.
	EtcdServers []string
	stop        func() error
	once        sync.Once
	err         error
}

// Options change what Start runs.
type Options struct {
	// DataDir reuses a data dir (to test restarts); empty means a new temporary one.
	DataDir string
	// NoControllers runs no controller manager: no controller writes what a test writes.
	NoControllers bool
	// Controllers picks the controllers to run, as `berth controllers --controllers`; empty
	// runs them all.
	Controllers []string
	// EtcdServers points the API server at an external etcd.
	EtcdServers []string
	// Components run beside the controllers once the API server is ready (a scheduler, ...).
	Components []cluster.Component
	// ComponentIdentities runs each component as its own Identity instead of the admin.
	ComponentIdentities bool
	// ServiceClusterIPRange and ServiceNodePortRange replace the API server's defaults.
	ServiceClusterIPRange, ServiceNodePortRange string
}

// Start starts a control plane and stops it when the test ends.
func Start(t testing.TB, opts ...Options) *Cluster {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	c, err := start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func start(o Options) (*Cluster, error) {
	var components []cluster.Component
	if !o.NoControllers {
		components = append(components, cluster.Component{Name: "controllers", Run: func(ctx context.Context, admin *rest.Config) error {
			return controllers.Run(ctx, admin, controllers.Options{Controllers: o.Controllers})
		}})
	}
	components = append(components, o.Components...)
	cp := cluster.New(cluster.Config{
		DataDir:     o.DataDir,
		Port:        0,
		EtcdServers: o.EtcdServers,
		Components:  components,

		ComponentIdentities: o.ComponentIdentities,

		ServiceClusterIPRange: o.ServiceClusterIPRange,
		ServiceNodePortRange:  o.ServiceNodePortRange,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cp.Run(ctx) }()
	select {
	case <-cp.Ready():
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("control plane failed to start: %w", err)
	case <-time.After(2 * time.Minute):
		cancel()
		return nil, errors.New("control plane did not become ready within 2 minutes")
	}
	config := cp.AdminConfig()
	config.QPS, config.Burst = -1, 0 // no client-side throttling in tests
	c := &Cluster{DataDir: o.DataDir, Config: config, Client: kubernetes.NewForConfigOrDie(config), EtcdServers: cp.EtcdServers()}
	c.stop = func() error {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("control plane stopped with an error: %w", err)
			}
			return nil
		case <-time.After(time.Minute):
			return errors.New("control plane did not stop within a minute")
		}
	}
	return c, nil
}

// Stop stops the control plane now; later calls return the first one's result.
func (c *Cluster) Stop() error {
	c.once.Do(func() { c.err = c.stop() })
	return c.err
}

// FrontProxyConfig is a client configuration of the front proxy (the aggregator's client
// certificate, from the front-proxy CA in the data dir), acting for user in groups through
// the request headers, as an aggregator does.
func (c *Cluster) FrontProxyConfig(user string, groups ...string) *rest.Config {
	config := rest.AnonymousClientConfig(c.Config)
	config.CertFile, config.KeyFile = cluster.FrontProxyClientFiles(c.DataDir)
	config.Impersonate = rest.ImpersonationConfig{}
	config.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return transport.NewAuthProxyRoundTripper(user, "", groups, nil, rt)
	}
	return config
}

// FrontProxyCAFile is the front-proxy CA in the data dir, which aggregated API servers
// trust the aggregator's client certificate by.
func (c *Cluster) FrontProxyCAFile() string { return cluster.FrontProxyCAFile(c.DataDir) }

// ProtobufConfig is the admin's client configuration speaking protobuf.
func (c *Cluster) ProtobufConfig() *rest.Config {
	config := rest.CopyConfig(c.Config)
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return config
}

var (
	sharedMu sync.Mutex
	// shared holds the package's shared control planes, keyed by their controllers.
	shared    = map[string]*Cluster{}
	sharedDir = map[string]string{}
)

// StartShared returns the package's shared control plane, starting it on first use. Main
// stops it after the last test. Of the options, only NoControllers and Controllers may be
// given: tests that write what a controller writes (a status, a scale) share one without it.
func StartShared(t testing.TB, opts ...Options) *Cluster {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.DataDir != "" || len(o.EtcdServers) > 0 || len(o.Components) > 0 || o.ComponentIdentities ||
		o.ServiceClusterIPRange != "" || o.ServiceNodePortRange != "" {
		t.Fatal("StartShared takes only NoControllers and Controllers; use Start for other options")
	}
	key := fmt.Sprint(o.NoControllers, o.Controllers)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if c := shared[key]; c != nil {
		return c
	}
	dir, err := os.MkdirTemp("", "berth-integration-")
	if err != nil {
		t.Fatal(err)
	}
	o.DataDir = dir
	c, err := start(o)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	shared[key], sharedDir[key] = c, dir
	return c
}

// Main runs the tests of a package, then stops its shared control plane.
func Main(m *testing.M) {
	code := m.Run()
	sharedMu.Lock()
	for key, c := range shared {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		os.RemoveAll(sharedDir[key])
	}
	sharedMu.Unlock()
	os.Exit(code)
}
