// Package server is the node agent's HTTPS API on :10250, which the API server and the cluster's
// tools call: seed 000's logServer (/logs/, the node's /var/log) grown into the kubelet's server
// with /healthz, /pods, /stats/summary, /metrics and /containerLogs, the endpoint behind `kubectl logs`, and /exec,
// /attach and /portForward behind `kubectl exec`, `attach` and `port-forward`.
//
// Every endpoint but /healthz is authenticated and authorized as the kubelet's (auth.go): a
// client certificate of the cluster CA names the user, whom the API server must allow, through
// a SubjectAccessReview, the node's subresource the path maps to (nodes/proxy for exec, attach,
// port-forward and container logs; nodes/stats, nodes/metrics, nodes/log, nodes/pods). So the
// API server's kubelet client may use every endpoint, and a user's own certificate only what
// the API server would let that user do through it. No certificate gets 401, a denied user 403.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// DefaultLogsDir is what /logs/ serves, as the kubelet's logServer.
const DefaultLogsDir = "/var/log"

// shutdownTimeout is how long running requests (log streams) get to finish when ctx ends.
const shutdownTimeout = 5 * time.Second

// ServerConfig says where and how the node API serves.
type ServerConfig struct {
	// Address is host:port to listen on (":10250").
	Address string
	// CertFile and KeyFile are the node's serving certificate (cluster.EnsureNodeServing).
	CertFile, KeyFile string
	// ClientCAFile holds the CA client certificates must chain to: the cluster CA.
	ClientCAFile string
	// NodeName is the node whose subresources (nodes/NAME/proxy, ...) requests are
	// authorized as.
	NodeName string
	// Authorizer decides whether an authenticated user may make a request
	// (NewDelegatingAuthorizer: a SubjectAccessReview to the API server).
	Authorizer authorizer.UnconditionalAuthorizer
	// LogsDir is served under /logs/ (/var/log).
	LogsDir string
	// Summary, when set, answers /stats/summary (the Summary API).
	Summary func(ctx context.Context) (*statsapi.Summary, error)
	// Metrics, when set, serves /metrics.
	Metrics http.Handler
	// SyncLoopHealthy, when set, is a /healthz check ("syncloop"): an error when the node
	// agent's sync loop is stuck.
	SyncLoopHealthy func() error
}

// PodSource is the node agent's set of pods (its pod manager).
type PodSource interface {
	GetPods() []*v1.Pod
	GetPodByName(namespace, name string) (*v1.Pod, bool)
}

// PodStatusSource is optionally implemented by a PodSource that knows pods' newest statuses
// (the status manager's), fresher than the pods' own.
type PodStatusSource interface {
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
}

// Serve serves the node API on cfg.Address until ctx ends, then lets running requests finish
// for a few seconds. It returns nil after ctx ends, or why it could not serve.
func Serve(ctx context.Context, cfg ServerConfig, pods PodSource, runtime container.Runtime) error {
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return fmt.Errorf("node API: %w", err)
	}
	return serve(ctx, ln, cfg, pods, runtime)
}

// serve serves on ln, which it closes.
func serve(ctx context.Context, ln net.Listener, cfg ServerConfig, pods PodSource, runtime container.Runtime) error {
	logger := klog.FromContext(ctx)
	tlsConfig, err := serverTLSConfig(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	handler, err := newHandler(cfg, pods, runtime)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	logger.Info("Serving the node API", "address", ln.Addr().String())
	select {
	case err := <-done:
		return fmt.Errorf("node API: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Follow streams end with their request contexts; whatever is left is cut.
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("node API: %w", err)
	}
	return nil
}

// serverTLSConfig presents the node's certificate and asks for (but does not demand) a client
// certificate, so that a request without one gets a 401 rather than a failed handshake.
func serverTLSConfig(cfg ServerConfig) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("node API serving certificate: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequestClientCert,
	}, nil
}

// handler routes the node API's requests.
type handler struct {
	pods     PodSource
	runtime  container.Runtime
	nodeName string
	authn    authenticator.Request
	authz    authorizer.UnconditionalAuthorizer
}

// newHandler returns the node API: /healthz without authentication, the rest behind
// authentication and authorization (withAuth), which come before routing, so that a path the
// node does not serve is a 404 only to a user who may use the node's API.
func newHandler(cfg ServerConfig, pods PodSource, runtime container.Runtime) (http.Handler, error) {
	if cfg.Authorizer == nil {
		return nil, errors.New("node API: no authorizer")
	}
	authn, err := newAuthenticator(cfg.ClientCAFile)
	if err != nil {
		return nil, err
	}
	h := &handler{pods: pods, runtime: runtime, nodeName: cfg.NodeName, authn: authn, authz: cfg.Authorizer}
	logsDir := cfg.LogsDir
	if logsDir == "" {
		logsDir = DefaultLogsDir
	}

	public := http.NewServeMux()
	checks := []healthz.HealthChecker{healthz.PingHealthz, healthz.LogHealthz}
	if cfg.SyncLoopHealthy != nil {
		checks = append(checks, healthz.NamedCheck("syncloop", func(*http.Request) error { return cfg.SyncLoopHealthy() }))
	}
	healthz.InstallHandler(public, checks...)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", h.getPods)
	mux.HandleFunc("GET /containerLogs/", h.getContainerLogs)
	if cfg.Summary != nil {
		mux.HandleFunc("GET /stats/summary", func(w http.ResponseWriter, r *http.Request) {
			summary, err := cfg.Summary(r.Context())
			if err != nil {
				klog.FromContext(r.Context()).Error(err, "Building the stats summary")
				http.Error(w, fmt.Sprintf("Internal Error: failed to get summary stats: %v", err), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(summary)
		})
	}
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	for _, method := range []string{"GET", "POST"} {
		mux.HandleFunc(method+" /exec/", h.getExec)
		mux.HandleFunc(method+" /attach/", h.getAttach)
		mux.HandleFunc(method+" /portForward/", h.getPortForward)
	}
	mux.Handle("GET /logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(logsDir))))
	authorized := h.withAuth(mux)
	return withPanicRecovery(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isSubpath(r.URL.Path, "/healthz") {
			public.ServeHTTP(w, r)
			return
		}
		authorized.ServeHTTP(w, r)
	})), nil
}

// Component names the node API in berth_recovered_panics_total.
const Component = "nodeapi"

// withPanicRecovery contains a panic in one request: logged with its stack, counted, and
// answered 500, as the API server's own filter answers. net/http would recover it too, but
// silently and without an answer. http.ErrAbortHandler is how a handler aborts a stream on
// purpose: it goes on to net/http.
func withPanicRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				err := panics.Record(r.Context(), Component, v)
				http.Error(w, fmt.Sprintf("Internal Error: %v", err), http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// writeStatus answers with a Kubernetes Status, as the API server does.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     int32(code),
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&status)
}

// getPods lists the pods the node agent runs, as a v1 PodList.
func (h *handler) getPods(w http.ResponseWriter, r *http.Request) {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, pod := range h.pods.GetPods() {
		list.Items = append(list.Items, *pod)
	}
	data, err := json.Marshal(&list)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
