package componentstatus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
)

// probeTimeout bounds one component's check, as kube-apiserver's.
const probeTimeout = 20 * time.Second

// Result is what one check says of a component: the Healthy condition's status, message and
// error.
type Result struct {
	Status  corev1.ConditionStatus
	Message string
	Error   string
}

// Prober checks one component's health.
type Prober interface {
	Probe(ctx context.Context) Result
}

// HTTPProber checks a component by a GET of its health endpoint, as kube-apiserver's
// probe does: a 2xx answer is healthy (its body the message), a redirect unknown, any other
// answer or no answer unhealthy (the status code or the client's error the message).
type HTTPProber struct {
	// URL is the health endpoint, https://127.0.0.1:10259/healthz.
	URL string
	// Client makes the request; nil is a client that does not check the server's certificate
	// (the components' serving certificates are self-signed).
	Client *http.Client
	// PlainHTTPFallback retries over plain HTTP when the server answers HTTPS with HTTP, as
	// berth's scheduler serves its health.
	PlainHTTPFallback bool
}

var insecureClient = &http.Client{
	Transport: utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives: true,
		Proxy:             nil,
	}),
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// maxBody is how much of an answer becomes the message (the kubelet's probes read 10 KiB).
const maxBody = 10 << 10

func (p *HTTPProber) Probe(ctx context.Context) Result {
	client := p.Client
	if client == nil {
		client = insecureClient
	}
	r := get(ctx, client, p.URL)
	if p.PlainHTTPFallback && r.httpToHTTPS && strings.HasPrefix(p.URL, "https://") {
		r = get(ctx, client, "http://"+strings.TrimPrefix(p.URL, "https://"))
	}
	return r.Result
}

type getResult struct {
	Result
	httpToHTTPS bool // the server answered TLS with HTTP
}

func get(ctx context.Context, client *http.Client, url string) getResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return getResult{Result: Result{Status: corev1.ConditionUnknown, Error: fmt.Sprintf("failed to construct probe request: %v", err)}}
	}
	res, err := client.Do(req)
	if err != nil {
		var header tls.RecordHeaderError
		plain := errors.As(err, &header) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
		return getResult{Result: Result{Status: corev1.ConditionFalse, Message: err.Error()}, httpToHTTPS: plain}
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return getResult{Result: Result{Status: corev1.ConditionFalse, Error: err.Error()}}
	}
	switch {
	case res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusMultipleChoices:
		return getResult{Result: Result{Status: corev1.ConditionTrue, Message: string(body)}}
	case res.StatusCode >= http.StatusMultipleChoices && res.StatusCode < http.StatusBadRequest:
		return getResult{Result: Result{Status: corev1.ConditionUnknown, Message: fmt.Sprintf("Probe terminated redirects, Response body: %v", string(body))}}
	}
	return getResult{Result: Result{Status: corev1.ConditionFalse, Message: fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)}}
}

// EtcdProber checks etcd through the storage's own client configuration: a read of the
// prefix's health key, as kube-apiserver's etcd prober does.
type EtcdProber struct {
	Config storagebackend.Config
}

func (p *EtcdProber) Probe(ctx context.Context) Result {
	prober, err := factory.CreateProber(p.Config)
	if err != nil {
		return Result{Status: corev1.ConditionFalse, Error: err.Error()}
	}
	defer func() { _ = prober.Close() }()
	if err := prober.Probe(ctx); err != nil {
		return Result{Status: corev1.ConditionFalse, Error: err.Error()}
	}
	return Result{Status: corev1.ConditionTrue, Message: "ok"}
}

// The components' health endpoints at their default secure ports, where kube-apiserver looks
// for them (it assumes, as berth does, that they run on its own machine).
const (
	SchedulerHealthURL         = "https://127.0.0.1:10259/healthz"
	ControllerManagerHealthURL = "https://127.0.0.1:10257/healthz"
)

// DefaultComponents are the components kube-apiserver reports: the scheduler and the
// controller manager at their default ports, and etcd-0 through etcd. berth's scheduler serves
// its health over plain HTTP (berth up --scheduler-health-address, 127.0.0.1:10259 by
// default); berth's controllers serve none, so the controller manager is healthy only when
// something (an upstream kube-controller-manager) answers at 10257.
func DefaultComponents(etcd storagebackend.Config) map[string]Prober {
	return map[string]Prober{
		"scheduler":          &HTTPProber{URL: SchedulerHealthURL, PlainHTTPFallback: true},
		"controller-manager": &HTTPProber{URL: ControllerManagerHealthURL},
		"etcd-0":             &EtcdProber{Config: etcd},
	}
}
