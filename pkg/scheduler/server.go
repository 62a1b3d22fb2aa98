package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/config"
	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// ServerOptions are what `berth scheduler` adds to the configuration file.
type ServerOptions struct {
	// Address serves /healthz, /readyz and /metrics over HTTP; empty serves nothing.
	Address string
	// Identity names this instance in the leader-election Lease (default: hostname_uuid).
	Identity string
	// Ready, if set, is closed once this instance schedules (it leads, or needs no election).
	Ready chan<- struct{}
	// OutOfTreeRegistry adds plugins that profiles may name beside the in-tree ones, as
	// kube-scheduler's app.WithPlugin does; a name in both is an error.
	OutOfTreeRegistry framework.Registry
}

// ErrLeaderElectionLost is Run's error when another instance took the Lease, or this one
// could not renew it in time (an overloaded API server).
var ErrLeaderElectionLost = errors.New("leader election lost")

// Run runs a scheduler against the API server until ctx ends: it builds the scheduler, starts
// the informers, and schedules while it holds the leader Lease (at once without election).
// Losing the Lease is an error, as for kube-scheduler, so that a supervisor restarts it.
func Run(ctx context.Context, restConfig *rest.Config, cfg *config.Config, o ServerOptions) error {
	logger := klog.FromContext(ctx)
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS, restConfig.Burst = cfg.ClientConnection.QPS, int(cfg.ClientConnection.Burst)
	restConfig.ContentType = cfg.ClientConnection.ContentType
	restConfig.UserAgent = "berth-scheduler"
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics.Register(registry)
	// The panics the scheduler recovered (all components' counts, one vector in the process).
	registry.MustRegister(panics.Recovered)

	// Events get a client (and rate limit) of their own, as in kube-scheduler, so that a burst
	// of events never delays a binding.
	eventClient, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: eventClient.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()

	factory := informers.NewSharedInformerFactory(client, 0)
	pluginRegistry := plugins.NewInTreeRegistry()
	for name, f := range o.OutOfTreeRegistry {
		if _, ok := pluginRegistry[name]; ok {
			return fmt.Errorf("a plugin named %s already exists", name)
		}
		pluginRegistry[name] = f
	}
	sched, err := New(ctx, Options{Config: cfg, Client: client, InformerFactory: factory, Broadcaster: broadcaster, Registry: pluginRegistry})
	if err != nil {
		return err
	}
	leading := make(chan struct{})
	if o.Address != "" {
		stop, err := serve(ctx, o.Address, registry, leading)
		if err != nil {
			return err
		}
		defer stop()
	}
	// The informers stop when Run returns (Shutdown waits for them), also when it returns
	// because the Lease was lost while ctx goes on.
	informersCtx, stopInformers := context.WithCancel(ctx)
	factory.Start(informersCtx.Done())
	defer factory.Shutdown()
	defer stopInformers()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}

	runScheduler := func(ctx context.Context) {
		close(leading)
		if o.Ready != nil {
			close(o.Ready)
		}
		sched.Run(ctx)
	}
	if cfg.LeaderElection.LeaderElect == nil || !*cfg.LeaderElection.LeaderElect {
		runScheduler(ctx)
		return nil
	}

	identity := o.Identity
	if identity == "" {
		host, _ := os.Hostname()
		identity = host + "_" + uuid.NewString()
	}
	le := cfg.LeaderElection
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName, client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	var result error
	leCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaderelection.RunOrDie(leCtx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Started leading; scheduling", "identity", identity)
				runScheduler(ctx)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					result = ErrLeaderElectionLost
				}
				cancel()
			},
		},
	})
	return result
}

// serve answers /healthz and /livez always, /readyz once this instance schedules, and
// /metrics, until the returned function is called.
func serve(ctx context.Context, address string, registry *prometheus.Registry, leading <-chan struct{}) (func(), error) {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/livez", ok)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-leading:
			ok(w, r)
		default:
			http.Error(w, "not leading", http.StatusServiceUnavailable)
		}
	})
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("serving health and metrics: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	klog.FromContext(ctx).Info("Serving health and metrics", "address", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}
