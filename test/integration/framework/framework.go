// Package framework starts a real control plane (embedded etcd, the API server and the
// controllers) inside a test process, on free ports in a temporary data dir, so that
// integration tests drive it with client-go.
package framework

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
	stop   func()
}

// Options change what Start runs.
type Options struct {
	// DataDir reuses a data dir (to test restarts); empty means a new temporary one.
	DataDir string
	// NoControllers leaves out the namespace and service account controllers.
	NoControllers bool
	// EtcdServers points the API server at an external etcd.
	EtcdServers []string
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
	var components []cluster.Component
	if !o.NoControllers {
		components = append(components, func(ctx context.Context, admin *rest.Config) error {
			return controllers.Run(ctx, admin, controllers.Options{})
		})
	}
	cp := cluster.New(cluster.Config{
		DataDir:     o.DataDir,
		Port:        0,
		EtcdServers: o.EtcdServers,
		Components:  components,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cp.Run(ctx) }()
	select {
	case <-cp.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("control plane failed to start: %v", err)
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatal("control plane did not become ready within 2 minutes")
	}
	config := cp.AdminConfig()
	config.QPS, config.Burst = -1, 0 // no client-side throttling in tests
	client := kubernetes.NewForConfigOrDie(config)
	c := &Cluster{DataDir: o.DataDir, Config: config, Client: client}
	var stopped bool
	c.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("control plane stopped with an error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("control plane did not stop within a minute")
		}
	}
	t.Cleanup(c.stop)
	return c
}

// Stop stops the control plane now (Start's cleanup does it otherwise).
func (c *Cluster) Stop() { c.stop() }

// ProtobufConfig is the admin's client configuration speaking protobuf.
func (c *Cluster) ProtobufConfig() *rest.Config {
	config := rest.CopyConfig(c.Config)
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return config
}
