package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

const (
	// component names the DNS server in logs and in berth_recovered_panics_total.
	component = "dns"
	// maxUDPSize caps what a UDP answer may take whatever the client's EDNS0 buffer says (the
	// DNS flag day 2020 size, which a UDP answer crosses without IP fragmentation); a larger
	// answer is truncated and the client asks again over TCP. It is also the size the server
	// advertises.
	maxUDPSize = 1232
	// readBufferSize is the largest query read over UDP.
	readBufferSize = dns.DefaultMsgSize
	// shutdownTimeout bounds how long Run waits for queries in flight once ctx ends.
	shutdownTimeout = 5 * time.Second
)

// Server is the cluster DNS: berth's records of the cluster's Services, EndpointSlices and
// Namespaces (three informers), the resolver that answers from them, a forwarder for the rest,
// and the UDP and TCP servers that Run serves on. Its ServeDNS answers a query without any
// socket.
type Server struct {
	cfg       completed
	store     *store
	resolver  *resolver
	forwarder *forwarder

	informers []cache.SharedIndexInformer
	synced    []cache.ResourceEventHandlerRegistration

	// ctx is Run's (logger, cancellation) once it runs; context.Background before.
	ctx     atomic.Pointer[context.Context]
	running atomic.Bool
	ready   chan struct{}

	mu    sync.Mutex
	addrs []string
}

var _ dns.Handler = &Server{}

// New makes the cluster DNS for client's cluster: its informers (a Service, an EndpointSlice
// and a Namespace informer, each keeping only what DNS answers from) and its configuration
// with defaults filled. Run runs them.
func New(client kubernetes.Interface, cfg Config) (*Server, error) {
	return newServer(client, cfg, os.ReadFile)
}

// newServer is New reading the node's resolv.conf with readFile.
func newServer(client kubernetes.Interface, cfg Config, readFile func(string) ([]byte, error)) (*Server, error) {
	c, err := cfg.complete(readFile)
	if err != nil {
		return nil, err
	}
	st := newStore()
	s := &Server{
		cfg:       c,
		store:     st,
		resolver:  &resolver{zone: c.zone, ttl: c.ttl, store: st},
		forwarder: newForwarder(c.upstreams),
		ready:     make(chan struct{}),
	}
	background := context.Background()
	s.ctx.Store(&background)

	services := coreinformers.NewServiceInformer(client, metav1.NamespaceAll, 0, cache.Indexers{})
	slices := discoveryinformers.NewEndpointSliceInformer(client, metav1.NamespaceAll, 0, cache.Indexers{})
	namespaces := coreinformers.NewNamespaceInformer(client, 0, cache.Indexers{})
	for _, x := range []struct {
		informer  cache.SharedIndexInformer
		transform cache.TransformFunc
		handler   cache.ResourceEventHandler
	}{
		{services, stripService, s.guarded(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.onService(obj, false) },
			UpdateFunc: func(_, obj any) { s.onService(obj, false) },
			DeleteFunc: func(obj any) { s.onService(obj, true) },
		})},
		{slices, stripSlice, s.guarded(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.onSlice(nil, obj, false) },
			UpdateFunc: func(old, obj any) { s.onSlice(old, obj, false) },
			DeleteFunc: func(obj any) { s.onSlice(nil, obj, true) },
		})},
		{namespaces, stripNamespace, s.guarded(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.onNamespace(obj, false) },
			UpdateFunc: func(_, obj any) { s.onNamespace(obj, false) },
			DeleteFunc: func(obj any) { s.onNamespace(obj, true) },
		})},
	} {
		if err := x.informer.SetTransform(x.transform); err != nil {
			return nil, err
		}
		reg, err := x.informer.AddEventHandler(x.handler)
		if err != nil {
			return nil, err
		}
		s.informers = append(s.informers, x.informer)
		s.synced = append(s.synced, reg)
	}
	return s, nil
}

// Run serves DNS on the configured addresses, over UDP and TCP, and keeps the records
// current, until ctx ends; it then stops its servers, waits for the queries in flight and for
// its informers, and returns nil. It returns an error when it cannot listen, or when a server
// fails. A Server runs once: to restart, make a new one.
func (s *Server) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("the cluster DNS server was already run: make a new one")
	}
	logger := klog.FromContext(ctx).WithValues("component", component)
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	defer cancel()
	s.ctx.Store(&ctx)

	servers, err := s.listen()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	s.runInformers(ctx, &wg)
	started := make(chan struct{}, len(servers))
	stopped := make(chan error, len(servers))
	for _, srv := range servers {
		srv.NotifyStartedFunc = func() { started <- struct{}{} }
		wg.Go(func() {
			err := panics.Call(ctx, component, srv.ActivateAndServe)
			if err == nil {
				err = errors.New("stopped")
			}
			stopped <- err
		})
	}

	// Every server must have started before any is shut down, or Shutdown misses it.
	var runErr error
	for range servers {
		select {
		case <-started:
		case runErr = <-stopped:
		}
		if runErr != nil {
			break
		}
	}
	if runErr == nil {
		close(s.ready)
		logger.Info("Serving cluster DNS", "zone", s.cfg.zone, "addresses", s.Addrs(), "upstreams", s.cfg.upstreams)
		if len(s.cfg.upstreams) == 0 {
			logger.Info("No upstream nameserver: names outside the cluster get SERVFAIL")
		}
		select {
		case <-ctx.Done():
		case runErr = <-stopped:
		}
	}
	cancel()
	shutdown, done := context.WithTimeout(context.Background(), shutdownTimeout)
	defer done()
	for _, srv := range servers {
		if err := srv.ShutdownContext(shutdown); err != nil {
			// Not started, or queries still in flight: close its socket so that it ends.
			closeServer(srv)
		}
	}
	wg.Wait()
	if runErr != nil {
		logger.Error(runErr, "A cluster DNS server failed")
		return fmt.Errorf("serving DNS: %w", runErr)
	}
	logger.Info("Stopped serving cluster DNS")
	return nil
}

// runInformers starts the informers in wg; they stop when ctx ends. A panic inside one is
// recovered and counted; an informer cannot run twice, so the records then stay as they were.
func (s *Server) runInformers(ctx context.Context, wg *sync.WaitGroup) {
	for _, informer := range s.informers {
		wg.Go(func() {
			_ = panics.Call(ctx, component, func() error { informer.RunWithContext(ctx); return nil })
		})
	}
}

// Ready is closed once Run serves on every address.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addrs are the addresses Run serves on (ports resolved), once Ready.
func (s *Server) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.addrs...)
}

// HasSynced says whether the records hold the informers' first lists. Until they do, a name
// of the zone that is not found is SERVFAIL rather than NXDOMAIN (as CoreDNS), so that a
// client does not cache a denial of a Service that exists.
func (s *Server) HasSynced() bool {
	for _, r := range s.synced {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

func (s *Server) context() context.Context { return *s.ctx.Load() }

// listen opens a UDP socket and a TCP listener on the same port for each address.
func (s *Server) listen() ([]*dns.Server, error) {
	var servers []*dns.Server
	var addrs []string
	for _, addr := range s.cfg.listen {
		pc, ln, err := listenPair(addr)
		if err != nil {
			for _, srv := range servers {
				closeServer(srv)
			}
			return nil, fmt.Errorf("listening for DNS on %s: %w", addr, err)
		}
		guard := func(r dns.Reader) dns.Reader { return guardedReader{next: r.(dns.PacketConnReader), s: s} }
		servers = append(servers,
			&dns.Server{PacketConn: pc, Handler: s, UDPSize: readBufferSize, DecorateReader: guard},
			&dns.Server{Listener: ln, Handler: s, DecorateReader: guard})
		addrs = append(addrs, pc.LocalAddr().String())
	}
	s.mu.Lock()
	s.addrs = addrs
	s.mu.Unlock()
	return servers, nil
}

// listenPair listens on addr over UDP and over TCP on the same port (with port 0, the port
// UDP got, trying again if TCP has it in use).
func listenPair(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	// IP_FREEBIND: the address may be one that appears later (a pod bridge's gateway, which
	// the CNI plugin adds with the first pod); the sockets receive once it does.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_FREEBIND, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	for attempt := 0; ; attempt++ {
		pc, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			return nil, nil, err
		}
		got := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(host, got))
		if err == nil {
			return pc, ln, nil
		}
		_ = pc.Close()
		if port != "0" || attempt == 10 {
			return nil, nil, err
		}
	}
}

func closeServer(srv *dns.Server) {
	if srv.PacketConn != nil {
		_ = srv.PacketConn.Close()
	}
	if srv.Listener != nil {
		_ = srv.Listener.Close()
	}
}

// guarded makes every event handler recover a panic (logged, counted), so that one odd object
// costs its own update and no more.
func (s *Server) guarded(h cache.ResourceEventHandlerFuncs) cache.ResourceEventHandlerFuncs {
	call := func(f func()) {
		_ = panics.Call(s.context(), component, func() error { f(); return nil })
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(func() { h.AddFunc(obj) }) },
		UpdateFunc: func(old, obj any) { call(func() { h.UpdateFunc(old, obj) }) },
		DeleteFunc: func(obj any) { call(func() { h.DeleteFunc(obj) }) },
	}
}

// unwrap is a deleted object's last known state.
func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

func (s *Server) onService(obj any, deleted bool) {
	svc, ok := unwrap(obj).(*service)
	if !ok {
		return
	}
	if deleted {
		s.store.setService(svc.namespace, svc.name, nil)
		return
	}
	s.store.setService(svc.namespace, svc.name, svc)
}

func (s *Server) onSlice(old, obj any, deleted bool) {
	slice, ok := unwrap(obj).(*endpointSlice)
	if !ok {
		return
	}
	if prev, ok := old.(*endpointSlice); ok && prev.service != slice.service {
		s.store.setSlice(prev.namespace, prev.service, prev.name, nil)
	}
	if deleted {
		s.store.setSlice(slice.namespace, slice.service, slice.name, nil)
		return
	}
	s.store.setSlice(slice.namespace, slice.service, slice.name, slice)
}

func (s *Server) onNamespace(obj any, deleted bool) {
	if ns, ok := unwrap(obj).(*namespace); ok {
		s.store.setNamespace(ns.name, !deleted)
	}
}
