// Package etcd runs the single etcd member that `berth up` and `berth apiserver` embed when no
// external etcd is given: the store under the API server ("store in etcd").
package etcd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/etcdlog"
)

// Config says where the member keeps its data and listens.
type Config struct {
	// DataDir holds the member's data; it survives restarts.
	DataDir string
	// ClientPort is the loopback port clients (the API server) use; 0 picks a free one.
	ClientPort int
	// StartTimeout bounds how long Start waits for the member to serve.
	StartTimeout time.Duration
}

// Server is a running member.
type Server struct {
	etcd *embed.Etcd
	// Endpoint is the client URL, e.g. http://127.0.0.1:2379.
	Endpoint string
}

// Start starts the member and waits until it serves clients. It listens on loopback only:
// the API server is its only client.
func Start(ctx context.Context, c Config) (*Server, error) {
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd data dir: %w", err)
	}
	clientPort, err := portOrFree(c.ClientPort)
	if err != nil {
		return nil, err
	}
	// The peer port matters to no one (there is one member), so it is free-picked each start.
	peerPort, err := portOrFree(0)
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}

	cfg := embed.NewConfig()
	cfg.Name = "berth"
	cfg.Dir = filepath.Clean(c.DataDir)
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdlog.New("etcd"))
	// Fewer entries kept in memory between snapshots: berth is a small cluster and its
	// memory matters more than raft's catch-up speed.
	cfg.SnapshotCount = 10000
	// The API server compacts every 5 minutes; etcd's own compaction is a safety net.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	timeout := c.StartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(timeout):
		e.Close()
		return nil, fmt.Errorf("etcd did not become ready within %s", timeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	klog.FromContext(ctx).Info("etcd is ready", "endpoint", clientURL.String(), "dataDir", cfg.Dir)
	return &Server{etcd: e, Endpoint: clientURL.String()}, nil
}

// Err reports a failure of the running member.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Stop stops the member and waits until it has written its state.
func (s *Server) Stop() { s.etcd.Close() }

func portOrFree(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
